'use strict';
// A Skills server built on the official TypeScript SDK v2 (@modelcontextprotocol/server,
// pinned in setup.sh) and its `./ext/skills` SkillsExtension, the peer of
// tests/interop/test_ts_v2_skills.py: trimcp's client lists, gets and reads its skill.
//
//   node skills_server.cjs          # stdio (2026-07-28 and 2025 from one factory)
//   node skills_server.cjs http     # HTTP on 127.0.0.1, a free port printed on stdout, path /mcp
//
// One skill, `skill://acme/invoice-check/SKILL.md`, held in memory: SKILL.md (front matter
// with a metadata map), a text reference and a small binary file (served as a base64 blob).
// The SDK computes the entry (digests, sizes) itself. Runs with NODE_PATH pointing at the
// installed packages.
const { McpServer, createMcpHandler } = require('@modelcontextprotocol/server');
const { SkillsExtension, memorySkillFiles } = require('@modelcontextprotocol/server/ext/skills');
const { serveStdio } = require('@modelcontextprotocol/server/stdio');
const { serveHttp } = require('./serve_http.cjs');

const FILES = {
    'invoice-check/SKILL.md': [
        '---',
        'name: invoice-check',
        'description: Check an invoice against its purchase order',
        'metadata:',
        '  owner: finance',
        '---',
        '',
        '# Invoice check',
        '',
        'Compare totals, then lines; see [the rules](references/RULES.md).',
        ''
    ].join('\n'),
    'invoice-check/references/RULES.md': '# Rules\n\n- Totals match to the cent.\n- Every line has a PO line.\n',
    'invoice-check/assets/stamp.bin': Uint8Array.from([0, 1, 2, 250, 251, 252, 253, 254, 255])
};

async function main() {
    const skills = await SkillsExtension.load(memorySkillFiles(FILES), { prefix: 'acme', strict: true });
    const buildServer = () => {
        const server = new McpServer({ name: 'ts-v2-skills-peer', version: '2.4.0' });
        skills.attach(server);
        return server;
    };
    if (process.argv[2] === 'http') {
        serveHttp(createMcpHandler(buildServer));
    } else {
        await serveStdio(buildServer);
    }
}

main().catch(error => {
    process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
    process.exit(1);
});
