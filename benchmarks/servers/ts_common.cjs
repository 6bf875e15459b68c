'use strict';
// Shared by the benchmark servers on the official TypeScript SDK (ts_v1_server.cjs,
// ts_v2_server.cjs): the suite's option convention (see benchmarks/suite/impls.py), the
// package loader, the handler counts behind the `stats` tool and the tool set itself, so
// both servers serve exactly what benchmarks/servers/trimcp_server.py serves:
//
// - echo(text) returns text; sleep(ms) sleeps ms milliseconds (the cancellation storm's
//   victim: the sleep ends early when the request is cancelled);
// - stats() returns JSON {"live", "started", "finished", "cancelled"} about every
//   echo/sleep/filler call so far (stats itself excluded);
// - with --tools N, fillers tool_0 .. tool_{N-1}, each an echo.
//
// Options: --modules DIR (the node_modules folder the suite installed the SDK into),
// --tools N, --page-size P, --http PORT, --json-response, --check. Exit status 3, with the
// reason on stderr, when the combination is not available; 2 for a bad option.
const path = require('node:path');
const { createRequire } = require('node:module');

const EXIT_UNAVAILABLE = 3;

function fail(program, status, message) {
    process.stderr.write(`${program}: ${message}\n`);
    process.exit(status);
}

function unavailable(program, reason) {
    fail(program, EXIT_UNAVAILABLE, `unavailable: ${reason}`);
}

function parseOptions(program, argv) {
    const opts = { modules: null, tools: 0, pageSize: null, http: null, jsonResponse: false, check: false };
    const integer = (option, text, min, max) => {
        const value = Number(text);
        if (text === undefined || !Number.isInteger(value) || value < min || value > max) {
            fail(program, 2, `${option} takes an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
        }
        return value;
    };
    for (let i = 0; i < argv.length; i++) {
        const option = argv[i];
        switch (option) {
            case '--modules':
                opts.modules = argv[++i];
                if (!opts.modules) fail(program, 2, '--modules takes the node_modules folder of the SDK');
                break;
            case '--tools':
                opts.tools = integer(option, argv[++i], 0, 100000);
                break;
            case '--page-size':
                opts.pageSize = integer(option, argv[++i], 1, 100000);
                break;
            case '--http':
                opts.http = integer(option, argv[++i], 0, 65535);
                break;
            case '--json-response':
                opts.jsonResponse = true;
                break;
            case '--check':
                opts.check = true;
                break;
            default:
                fail(program, 2, `unknown option ${JSON.stringify(option)} (see the header of ${program}.cjs)`);
        }
    }
    if (opts.modules === null) fail(program, 2, '--modules DIR is required (the SDK is installed by the suite)');
    return opts;
}

// A `require` that resolves packages in the installed tree only (never a global install).
function loader(program, modules) {
    const load = createRequire(path.join(path.dirname(path.resolve(modules)), 'package.json'));
    return name => {
        try {
            return load(name);
        } catch (error) {
            return unavailable(program, `cannot load ${name} from ${modules}: ${error.message.split('\n')[0]}`);
        }
    };
}

const stats = { started: 0, finished: 0, cancelled: 0 };

function snapshot() {
    return JSON.stringify({ live: stats.started - stats.finished, ...stats });
}

const text = value => ({ content: [{ type: 'text', text: value }] });

// Runs one counted handler; `signal` is the request's abort signal (aborted by a cancel).
async function counted(signal, body) {
    stats.started++;
    try {
        return await body();
    } finally {
        stats.finished++;
        if (signal.aborted) stats.cancelled++;
    }
}

function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal.aborted) {
            reject(signal.reason);
            return;
        }
        const onAbort = () => {
            clearTimeout(timer);
            reject(signal.reason);
        };
        const timer = setTimeout(() => {
            signal.removeEventListener('abort', onAbort);
            resolve();
        }, ms);
        signal.addEventListener('abort', onAbort, { once: true });
    });
}

// The zod schemas, made once per process (an SDK v2 server builds a fresh instance per
// HTTP request; only the registration is per instance).
function schemas(z) {
    return {
        echo: z.object({ text: z.string() }),
        sleep: z.object({ ms: z.number().min(0) }),
        none: z.object({})
    };
}

// Registers echo, sleep, stats and `tools` fillers on an McpServer of either SDK;
// `signalOf` reads the request's abort signal from the handler's second argument.
function registerTools(server, shapes, tools, signalOf) {
    server.registerTool(
        'echo',
        { description: 'Echo the text back.', inputSchema: shapes.echo },
        async ({ text: value }, extra) => counted(signalOf(extra), async () => text(value))
    );
    server.registerTool('sleep', { description: 'Sleep for ms milliseconds.', inputSchema: shapes.sleep }, async ({ ms }, extra) => {
        const signal = signalOf(extra);
        return counted(signal, async () => {
            await sleep(ms, signal);
            return text('slept');
        });
    });
    server.registerTool('stats', { description: 'Handler counts.', inputSchema: shapes.none }, async () => text(snapshot()));
    for (let i = 0; i < tools; i++) {
        const name = `tool_${i}`;
        server.registerTool(
            name,
            { description: `Filler tool ${name}: echoes text.`, inputSchema: shapes.echo },
            async ({ text: value }, extra) => counted(signalOf(extra), async () => text(value))
        );
    }
}

module.exports = { EXIT_UNAVAILABLE, fail, unavailable, parseOptions, loader, schemas, registerTools };
