-- POST a job with catalog references (found by xref after the first ones).
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local ws = os.getenv("BENCH_WORKSPACE")
local counter = 0
request = function()
  counter = counter + 1
  local body = string.format(
    '{"xref":"J-%d","activity":"load","eta":"2026-12-01T10:00:00Z","location":{"xref":"NLRTM","name":"Rotterdam"},' ..
    '"cargo":{"product":{"xref":"GO","name":"Gasoil"},"quantity":%d,"uom":{"xref":"MT","name":"MT"}},' ..
    '"requested":{"quality":true}}', counter, counter)
  return wrk.format("POST", "/workspaces/" .. ws .. "/jobs",
    {["Authorization"] = "Bearer " .. c.key, ["Content-Type"] = "application/json"}, body)
end
done = c.done
