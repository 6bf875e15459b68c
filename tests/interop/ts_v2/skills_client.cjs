'use strict';
// A Skills host built on the official TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned in setup.sh) and its `./ext/skills` SkillsClient, the peer of
// tests/interop/test_ts_v2_skills.py: it connects to a server over Streamable HTTP, lists its
// skills, gets one by URI, reads (and so verifies) that skill's SKILL.md and every other file
// its entry lists, and prints one JSON report on stdout.
//
//   node skills_client.cjs <url> legacy|auto
//
// A check the SDK refuses (a digest, size or front matter that differs) throws: the peer
// exits non-zero with the error on stderr. Runs with NODE_PATH pointing at the installed
// packages.
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { SkillsClient } = require('@modelcontextprotocol/client/ext/skills');

async function main() {
    const [url, mode] = process.argv.slice(2);
    if (!url || !['legacy', 'auto'].includes(mode)) {
        throw new Error('usage: node skills_client.cjs <url> legacy|auto');
    }
    const client = new Client({ name: 'ts-v2-skills-host', version: '2.4.0' }, { versionNegotiation: { mode } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
        const skills = new SkillsClient(client);
        const listing = await skills.list();
        const entries = [];
        for (const skill of listing.skills) {
            const { skill: got } = await skills.get(skill.uri);
            const manifest = await skills.read(skill);
            const files = {};
            for (const resource of Array.isArray(skill.resources) ? skill.resources : []) {
                const file = await skills.read(skill, resource.uri);
                files[resource.uri] = { verified: file.verified, size: file.bytes.length, text: file.text };
            }
            entries.push({
                uri: skill.uri,
                got: got.uri,
                skillMd: {
                    verified: manifest.verified,
                    frontmatter: manifest.frontmatter,
                    body: manifest.body
                },
                files
            });
        }
        const report = {
            protocolVersion: client.getNegotiatedProtocolVersion(),
            server: client.getServerVersion(),
            supported: skills.supported,
            directoryRead: skills.directoryRead,
            invalid: listing.invalid,
            skills: entries
        };
        process.stdout.write(JSON.stringify(report) + '\n');
    } finally {
        await client.close();
    }
}

main().catch(error => {
    process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
    process.exit(1);
});
