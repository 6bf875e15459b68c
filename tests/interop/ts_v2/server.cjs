'use strict';
// A small server built on the official TypeScript SDK v2 (@modelcontextprotocol/server,
// pinned in setup.sh), the peer of tests/interop/test_client_vs_ts_v2.py: trimcp's client
// in auto mode negotiates 2026-07-28 with it over stdio and Streamable HTTP.
//
//   node server.cjs            # stdio (serveStdio: 2026-07-28 and 2025 from one factory)
//   node server.cjs http       # HTTP on 127.0.0.1, a free port printed on stdout, path /mcp
//
// Tools: add(a, b); count(steps) (progress); log_levels() (one log message per level,
// sent only when the request asks for a log level); ask_user() (elicitation), ask_model
// (question) (sampling) and client_roots() (roots), each through an InputRequiredResult;
// touch(uri) (HTTP: a resource update and a tools list change for subscriptions/listen).
// Resource ts://static, template ts://items/{id}, prompt greet(name, style), completion of
// both. Runs with NODE_PATH pointing at the installed packages.
const {
    McpServer,
    ResourceTemplate,
    acceptedContent,
    completable,
    createMcpHandler,
    inputRequired
} = require('@modelcontextprotocol/server');
const { serveStdio } = require('@modelcontextprotocol/server/stdio');
const { serveHttp } = require('./serve_http.cjs');
const z = require('zod/v4');

const ITEMS = ['apple', 'apricot', 'banana'];
const STYLES = ['formal', 'friendly', 'funny'];
let handler = null; // the HTTP handler, whose notifier feeds subscriptions/listen

const text = value => ({ content: [{ type: 'text', text: value }] });

function buildServer() {
    const server = new McpServer(
        { name: 'ts-v2-peer', version: '2.4.0' },
        {
            capabilities: { logging: {}, completions: {} },
            instructions: 'The TypeScript v2 peer.'
        }
    );
    server.registerTool(
        'add',
        { description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }) },
        async ({ a, b }) => text(String(a + b))
    );
    server.registerTool(
        'count',
        { description: 'One progress notification per step', inputSchema: z.object({ steps: z.number().int() }) },
        async ({ steps }, ctx) => {
            const token = ctx.mcpReq._meta?.progressToken;
            for (let step = 1; step <= steps; step++) {
                if (token !== undefined) {
                    await ctx.mcpReq.notify({
                        method: 'notifications/progress',
                        params: { progressToken: token, progress: step, total: steps, message: `step ${step}` }
                    });
                }
            }
            return text(`counted ${steps}`);
        }
    );
    server.registerTool('log_levels', { description: 'Log at four levels', inputSchema: z.object({}) }, async (_args, ctx) => {
        for (const level of ['debug', 'info', 'warning', 'error']) {
            await ctx.mcpReq.log(level, { level });
        }
        return text('logged');
    });
    server.registerTool('ask_user', { description: 'Elicitation', inputSchema: z.object({}) }, async (_args, ctx) => {
        const profile = acceptedContent(ctx.mcpReq.inputResponses, 'profile');
        if (profile === undefined) {
            return inputRequired({
                inputRequests: {
                    profile: inputRequired.elicit({
                        message: 'Who are you?',
                        requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
                    })
                }
            });
        }
        return text(`hello ${profile.name}`);
    });
    server.registerTool('ask_model', { description: 'Sampling', inputSchema: z.object({ question: z.string() }) }, async ({ question }, ctx) => {
        const answer = ctx.mcpReq.inputResponses?.llm;
        if (answer === undefined) {
            return inputRequired({
                inputRequests: {
                    llm: inputRequired.createMessage({
                        messages: [{ role: 'user', content: { type: 'text', text: question } }],
                        maxTokens: 50
                    })
                }
            });
        }
        return text(`${answer.model} says: ${answer.content.text}`);
    });
    server.registerTool('client_roots', { description: 'Roots', inputSchema: z.object({}) }, async (_args, ctx) => {
        const roots = ctx.mcpReq.inputResponses?.roots;
        if (roots === undefined) {
            return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
        }
        return text(roots.roots.map(root => root.uri).join(','));
    });
    server.registerTool('touch', { description: 'Announce changes', inputSchema: z.object({ uri: z.string() }) }, async ({ uri }) => {
        if (handler !== null) {
            handler.notify.resourceUpdated(uri);
            handler.notify.toolsChanged();
        }
        return text('touched');
    });
    server.registerResource('static', 'ts://static', { mimeType: 'text/plain' }, async uri => ({
        contents: [{ uri: uri.href, text: 'static text from the TS peer' }]
    }));
    server.registerResource(
        'item',
        new ResourceTemplate('ts://items/{id}', {
            list: undefined,
            complete: { id: value => ITEMS.filter(item => item.startsWith(value)) }
        }),
        { mimeType: 'text/plain' },
        async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `item ${id}` }] })
    );
    server.registerPrompt(
        'greet',
        {
            description: 'Greet someone in a style',
            argsSchema: z.object({
                name: z.string(),
                style: completable(z.string(), value => STYLES.filter(style => style.startsWith(value)))
            })
        },
        ({ name, style }) => ({
            messages: [{ role: 'user', content: { type: 'text', text: `Write a ${style} greeting for ${name}.` } }]
        })
    );
    return server;
}

if (process.argv[2] === 'http') {
    handler = createMcpHandler(buildServer);
    serveHttp(handler);
} else {
    void serveStdio(buildServer);
}
