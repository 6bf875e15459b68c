// Node `--require` preload: every TCP server started in this process listens on 127.0.0.1.
//
// The conformance suite's mock servers (client scenarios, auth servers) call
// `server.listen(0)` / `app.listen(0)`, which binds all interfaces ("::" / "0.0.0.0").
// This patch rewrites the host of every TCP listen to CONFORMANCE_LISTEN_HOST
// (default 127.0.0.1), whatever the caller passed. Unix-socket paths, handles and fds are
// left alone. http.Server, https.Server and express all inherit net.Server.prototype.listen.
// Set CONFORMANCE_PRELOAD_DEBUG=1 to log each rewritten listen on stderr.
//
// Binding must stay synchronous: the suite reads `server.address().port` right after
// `listen(0)`. Without a host Node binds at once, but with one it first resolves the host
// through dns.lookup (asynchronous even for an IP literal), leaving address() null. So,
// only for the duration of our own listen call, dns.lookup answers an IP literal
// synchronously with the literal itself (net asks with {all: true} on Node 22, without
// on Node 20; both forms are handled).
'use strict';

const net = require('net');
const dns = require('dns');

const HOST = process.env.CONFORMANCE_LISTEN_HOST || '127.0.0.1';
const DEBUG = !!process.env.CONFORMANCE_PRELOAD_DEBUG;
const originalListen = net.Server.prototype.listen;
const originalLookup = dns.lookup;

if (!net.isIP(HOST)) {
  throw new Error(`localhost-preload: CONFORMANCE_LISTEN_HOST must be an IP literal, got ${HOST}`);
}

let syncLookup = false;
dns.lookup = function lookup(hostname, options, callback) {
  const family = net.isIP(hostname);
  if (syncLookup && family) {
    const cb = typeof options === 'function' ? options : callback;
    if (options && typeof options === 'object' && options.all) {
      cb(null, [{ address: hostname, family }]);
    } else {
      cb(null, hostname, family);
    }
    return {};
  }
  return originalLookup.apply(this, arguments);
};

function listenNow(server, options, cb) {
  syncLookup = true;
  try {
    return cb ? originalListen.call(server, options, cb) : originalListen.call(server, options);
  } finally {
    syncLookup = false;
  }
}

function isPort(v) {
  return typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
}

function toBacklog(v) {
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

function localhostListen(...args) {
  const cb = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
  const first = args[0];
  let options;

  if (first === undefined || first === null || isPort(first)) {
    // listen(), listen(cb), listen(port[, host][, backlog][, cb]), listen(port[, backlog][, cb])
    const rest = args.slice(1);
    const backlog = toBacklog(typeof rest[0] === 'string' ? rest[1] : rest[0]);
    options = { port: first == null ? 0 : Number(first), host: HOST };
    if (backlog !== undefined) options.backlog = backlog;
  } else if (
    typeof first === 'object' &&
    first.path === undefined &&
    first.fd === undefined &&
    first.handle === undefined &&
    first._handle === undefined &&
    !(first instanceof net.Server) &&
    !(first instanceof net.Socket)
  ) {
    // listen(options[, cb]) for TCP
    options = { ...first, host: HOST };
    delete options.ipv6Only;
  } else {
    // Unix socket path, handle, fd: not a TCP interface, leave it as it is.
    return originalListen.apply(this, cb ? [...args, cb] : args);
  }

  if (DEBUG) {
    process.stderr.write(`[localhost-preload] listen(${JSON.stringify(options)})\n`);
  }
  return listenNow(this, options, cb);
}

net.Server.prototype.listen = localhostListen;
