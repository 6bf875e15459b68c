'use strict';
// Serves an SDK v2 fetch-style handler (createMcpHandler) with node:http on 127.0.0.1, the
// port (a free one unless `port` is given) printed on stdout as the first line, for the peers
// of this folder (server.cjs, skills_server.cjs) and the benchmark server
// benchmarks/servers/ts_v2_server.cjs: the SDK hands out a Web-standard handler, the tests
// and the benchmarks need a real port.
const http = require('node:http');

function serveHttp(handler, port = 0) {
    const server = http.createServer(async (req, res) => {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        const abort = new AbortController();
        res.on('close', () => abort.abort());
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers)) {
            if (typeof value === 'string') headers.set(name, value);
        }
        const body = chunks.length > 0 && req.method !== 'GET' ? Buffer.concat(chunks) : undefined;
        const request = new Request(`http://${req.headers.host}${req.url}`, {
            method: req.method,
            headers,
            body,
            signal: abort.signal
        });
        let response;
        try {
            response = await handler.fetch(request);
        } catch (error) {
            res.writeHead(500).end(String(error));
            return;
        }
        res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
        if (response.body === null) {
            res.end();
            return;
        }
        try {
            for await (const chunk of response.body) res.write(chunk);
        } catch {
            // the client went away: nothing more to send
        }
        res.end();
    });
    server.listen(port, '127.0.0.1', () => {
        process.stdout.write(`${server.address().port}\n`);
    });
    return server;
}

module.exports = { serveHttp };
