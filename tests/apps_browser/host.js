// A minimal MCP Apps host for the browser test (bundled by setup.sh with esbuild).
//
// It is built on the official packages: the MCP client of the TypeScript SDK talks to the
// server (Streamable HTTP, same origin: the test's page server relays /mcp), and ext-apps'
// AppBridge talks to the app page in a sandboxed iframe over PostMessageTransport. What
// it does is what a chat host does when a tool with a UI is called: find the tool's
// `ui://` page, read it, render it, hand it the tool's input and result, and relay the
// page's own tool calls to the server (only tools the page may call).
//
// Progress goes to #log (one line per step) and, when something fails, to #error; the
// test reads both.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  getToolUiResourceUri,
  isToolVisibilityModelOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const log = (line) => {
  const item = document.createElement("li");
  item.textContent = line;
  document.getElementById("log").append(item);
};

async function main() {
  const client = new Client({ name: "trimcp-browser-host", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  log(`connected to ${client.getServerVersion().name}`);

  const { tools } = await client.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const tool = byName.get("visits");
  const uri = getToolUiResourceUri(tool);
  log(`tool visits renders ${uri}`);

  const read = await client.readResource({ uri });
  const [page] = read.contents;
  log(`read ${page.uri} (${page.mimeType})`);

  // The page gets a frame of its own: scripts run, but in an opaque origin (no
  // allow-same-origin), so it reaches the host only through postMessage. The bridge
  // listens before the page loads: the page's first message is its ui/initialize.
  const frame = document.createElement("iframe");
  frame.id = "app";
  frame.setAttribute("sandbox", "allow-scripts");
  document.getElementById("stage").append(frame);

  const bridge = new AppBridge(
    client,
    { name: "trimcp-browser-host", version: "1.0.0" },
    { serverTools: {}, serverResources: {} },
  );
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = resolve;
  });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  // connect() installed the plain forwarding of tools/call; this one replaces it: the
  // page's tool calls go to the server unless the tool is for the model only.
  bridge.oncalltool = async (params, extra) => {
    const target = byName.get(params.name);
    if (target === undefined || isToolVisibilityModelOnly(target)) {
      throw new Error(`the page may not call ${params.name}`);
    }
    const result = await client.callTool(params, { signal: extra.mcpReq.signal });
    log(`relayed ${params.name} -> ${JSON.stringify(result.structuredContent)}`);
    return result;
  };
  frame.srcdoc = page.text;
  await initialized;
  log(`app initialized: ${JSON.stringify(bridge.getAppVersion())}`);

  // What the model's call of the tool would bring: its input, then its result.
  await bridge.sendToolInput({ arguments: {} });
  const result = await client.callTool({ name: "visits", arguments: {} });
  await bridge.sendToolResult(result);
  log(`sent the result of visits: ${JSON.stringify(result.structuredContent)}`);
  document.body.dataset.state = "ready";
}

main().catch((error) => {
  document.getElementById("error").textContent = String(error && error.stack || error);
  document.body.dataset.state = "failed";
});
