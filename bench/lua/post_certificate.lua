-- POST a certificate: an array of BENCH_ITEMS (default 30) quality results
-- under one job, in one request.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local path = "/workspaces/" .. os.getenv("BENCH_WORKSPACE") .. "/jobs/" .. os.getenv("BENCH_JOB") .. "/quality"
local items = tonumber(os.getenv("BENCH_ITEMS") or "30")
local counter = 0
request = function()
  counter = counter + 1
  local parts = {}
  for i = 1, items do
    parts[i] = string.format(
      '{"status":"preliminary","setNumber":%d,"testNumber":%d,"sample":{"location":"T1"},' ..
      '"test":{"xref":"DEN","name":"Density"},"method":{"xref":"D4052","name":"ASTM D4052"},' ..
      '"uom":{"xref":"KGM3","name":"kg/m3"},"result":"845.%d","resultOperator":"eq"}', counter, i, i % 10)
  end
  return wrk.format("POST", path,
    {["Authorization"] = "Bearer " .. c.key, ["Content-Type"] = "application/json"},
    "[" .. table.concat(parts, ",") .. "]")
end
done = c.done
