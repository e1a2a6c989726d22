-- POST a quality result under one job.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local path = "/workspaces/" .. os.getenv("BENCH_WORKSPACE") .. "/jobs/" .. os.getenv("BENCH_JOB") .. "/quality"
local counter = 0
request = function()
  counter = counter + 1
  local body = string.format(
    '{"status":"preliminary","setNumber":%d,"testNumber":1,"sample":{"location":"T1"},' ..
    '"test":{"xref":"DEN","name":"Density"},"method":{"xref":"D4052","name":"ASTM D4052"},' ..
    '"uom":{"xref":"KGM3","name":"kg/m3"},"result":"845.%d","resultOperator":"eq"}', counter, counter % 10)
  return wrk.format("POST", path,
    {["Authorization"] = "Bearer " .. c.key, ["Content-Type"] = "application/json"}, body)
end
done = c.done
