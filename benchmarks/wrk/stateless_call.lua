-- wrk script: one 2026-07-28 stateless tools/call of `echo` per request, on keep-alive
-- connections. Every answer is checked (status 200 and the echoed text); the count of bad
-- answers and the latency percentiles are printed on one line for benchmarks/replicas.py.
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
  .. '"arguments":{"text":"wrk"},"_meta":{'
  .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"

local bad = 0

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"text":"wrk"', 1, true) then
    bad = bad + 1
    if bad == 1 then
      io.stderr:write("first bad answer: " .. status .. " " .. body:sub(1, 300) .. "\n")
    end
  end
end

function done(summary, latency, requests)
  io.write(string.format(
    "WRK_RESULT requests=%d bad=%d errors=%d p50_ms=%.3f p99_ms=%.3f\n",
    summary.requests, bad,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
