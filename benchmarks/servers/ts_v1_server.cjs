'use strict';
// Benchmark server on the official TypeScript SDK v1 (@modelcontextprotocol/sdk, exactly
// the version tests/interop/ts_everything/package-lock.json pins), the suite's `ts-v1`:
// an McpServer with the tools of ts_common.cjs, registered with zod schemas as the SDK's
// README does.
//
//   node ts_v1_server.cjs --modules DIR [--tools N]                  # stdio
//   node ts_v1_server.cjs --modules DIR --http PORT [--json-response] # Streamable HTTP
//
// Over HTTP (127.0.0.1:PORT/mcp, node:http) it is the SDK's sessionful wiring: one
// StreamableHTTPServerTransport and one McpServer per session, found by Mcp-Session-Id;
// --json-response sets enableJsonResponse. The SDK speaks the 2025 revisions only (its
// answer to a 2026-07-28 request is HTTP 400). McpServer lists every tool in one page, so
// --page-size is unavailable (exit status 3). DIR comes from the suite
// (benchmarks/suite/ts_sdk.py), which installs the pinned tree into .cache/ on first use.
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const common = require('./ts_common.cjs');

const PROGRAM = 'ts_v1_server';
const opts = common.parseOptions(PROGRAM, process.argv.slice(2));
const load = common.loader(PROGRAM, opts.modules);
const { McpServer } = load('@modelcontextprotocol/sdk/server/mcp.js');
const z = load('zod/v4');
if (opts.pageSize !== null) {
    common.unavailable(PROGRAM, "McpServer lists every tool in one page (the SDK has no tools/list pagination)");
}
const transportModule = opts.http === null ? '@modelcontextprotocol/sdk/server/stdio.js' : '@modelcontextprotocol/sdk/server/streamableHttp.js';
const transports = load(transportModule);
if (opts.check) process.exit(0);

const shapes = common.schemas(z);

function buildServer() {
    const server = new McpServer({ name: 'ts-v1-bench', version: '1.0.0' });
    common.registerTools(server, shapes, opts.tools, extra => extra.signal);
    return server;
}

function refuse(res, status, message) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

function serveHttp(port) {
    const sessions = new Map(); // session id -> transport
    async function onRequest(req, res) {
        if (new URL(req.url, 'http://localhost').pathname !== '/mcp') return refuse(res, 404, 'Not found');
        const sessionId = req.headers['mcp-session-id'];
        if (typeof sessionId === 'string') {
            const transport = sessions.get(sessionId);
            if (transport === undefined) return refuse(res, 404, 'Session not found');
            return transport.handleRequest(req, res);
        }
        if (req.method !== 'POST') return refuse(res, 400, 'No session: POST an initialize request first');
        // A new session: the transport checks that this is an initialize request.
        const transport = new transports.StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            enableJsonResponse: opts.jsonResponse,
            onsessioninitialized: id => sessions.set(id, transport)
        });
        transport.onclose = () => {
            if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
        return transport.handleRequest(req, res);
    }
    const server = http.createServer((req, res) =>
        // A failed request must not take the server down with an unhandled rejection.
        onRequest(req, res).catch(error => {
            if (res.headersSent) res.end();
            else refuse(res, 500, String(error));
        })
    );
    server.listen(port, '127.0.0.1');
}

if (opts.http !== null) {
    serveHttp(opts.http);
} else {
    void buildServer().connect(new transports.StdioServerTransport());
}
