'use strict';
// Benchmark server on the official TypeScript SDK v2 (@modelcontextprotocol/server, exactly
// the version tests/interop/ts_v2/package-lock.json pins), the suite's `ts-v2`: a factory
// of McpServer instances with the tools of ts_common.cjs, served the way the SDK's docs
// show, from one factory for both protocol eras.
//
//   node ts_v2_server.cjs --modules DIR [--tools N]    # stdio (serveStdio: 2026-07-28 and 2025)
//   node ts_v2_server.cjs --modules DIR --http PORT    # Streamable HTTP (createMcpHandler)
//
// Over HTTP (127.0.0.1:PORT/mcp) createMcpHandler builds one instance per request: a
// 2026-07-28 request is served statelessly by the modern leg, a 2025 request by the
// default stateless legacy leg (no Mcp-Session-Id, answers over SSE). The handler is
// fetch-shaped; tests/interop/ts_v2/serve_http.cjs puts it on node:http. The legacy leg
// takes no JSON-response option, so --http --json-response is unavailable (exit status
// 3), as is --page-size (McpServer lists every tool in one page). DIR comes from the suite
// (benchmarks/suite/ts_sdk.py), which installs the pinned tree into .cache/ on first use.
const path = require('node:path');
const common = require('./ts_common.cjs');

const PROGRAM = 'ts_v2_server';
const opts = common.parseOptions(PROGRAM, process.argv.slice(2));
const load = common.loader(PROGRAM, opts.modules);
const { McpServer, createMcpHandler } = load('@modelcontextprotocol/server');
const { serveStdio } = load('@modelcontextprotocol/server/stdio');
const z = load('zod/v4');
if (opts.pageSize !== null) {
    common.unavailable(PROGRAM, 'McpServer lists every tool in one page (the SDK has no tools/list pagination)');
}
if (opts.http !== null && opts.jsonResponse) {
    common.unavailable(PROGRAM, "createMcpHandler answers 2025-era requests over SSE only (its responseMode shapes 2026-07-28 answers)");
}
if (opts.check) process.exit(0);

const shapes = common.schemas(z);

function buildServer() {
    const server = new McpServer({ name: 'ts-v2-bench', version: '1.0.0' }, { capabilities: { tools: {} } });
    common.registerTools(server, shapes, opts.tools, ctx => ctx.mcpReq.signal);
    return server;
}

if (opts.http !== null) {
    const { serveHttp } = require(path.join(__dirname, '..', '..', 'tests', 'interop', 'ts_v2', 'serve_http.cjs'));
    serveHttp(createMcpHandler(buildServer), opts.http);
} else {
    void serveStdio(buildServer);
}
