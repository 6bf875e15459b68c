// Plays the host around app_page's bridge in Node (no browser): a fake window whose parent
// records what the page posts, and a way to deliver the host's messages to the page.
// Reads the bridge source from stdin; prints what happened as one JSON line.
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const listeners = [];
  const posted = [];
  const parent = { postMessage: (message) => posted.push(message) };
  global.window = { parent, addEventListener: (type, fn) => listeners.push(fn) };
  global.document = { documentElement: {} };
  const deliver = (data, source = parent) => listeners.forEach((fn) => fn({ source, data }));
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  new Function(Buffer.concat(chunks).toString("utf8"))();
  const app = window.mcpApp;
  const seen = [];
  app.on("toolresult", (r) => seen.push(["toolresult", r]));

  await tick();
  const init = posted[0];
  deliver({ jsonrpc: "2.0", id: init.id, result: { protocolVersion: "2026-01-26",
    hostCapabilities: {}, hostInfo: { name: "harness", version: "0" },
    hostContext: { theme: "dark" } } });
  await app.ready;
  await tick();
  deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result",
            params: { structuredContent: { visits: 3 } } });
  // A message from another frame is not the host's: ignored.
  deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result",
            params: { structuredContent: { visits: 666 } } }, {});
  const late = [];
  app.on("toolresult", (r) => late.push(r));

  const call = app.callTool("record_visit", { n: 1 });
  await tick();
  const request = posted[posted.length - 1];
  deliver({ jsonrpc: "2.0", id: request.id, result: { structuredContent: { visits: 4 } } });
  const answered = await call;

  const failing = app.callTool("nope");
  await tick();
  const second = posted[posted.length - 1];
  deliver({ jsonrpc: "2.0", id: second.id, error: { code: -32602, message: "Unknown tool" } });
  let failure = null;
  try { await failing; } catch (error) { failure = { message: error.message, code: error.code }; }

  deliver({ jsonrpc: "2.0", id: 99, method: "ping" });
  deliver({ jsonrpc: "2.0", id: 100, method: "ui/resource-teardown", params: { reason: "x" } });
  deliver({ jsonrpc: "2.0", id: 101, method: "unknown/method" });
  await tick();
  console.log(JSON.stringify({ posted, seen, late, answered, failure }));
});
