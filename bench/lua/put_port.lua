-- PUT an update of a random port (always a real change, so always a write).
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local codes = c.lines(os.getenv("BENCH_CODES"))
local counter = 0
setup = c.setup
init = c.init
request = function()
  counter = counter + 1
  local code = codes[math.random(#codes)]
  local body = string.format(
    '{"name":"Port %s","countryCode":"%s","statusCode":"ACTIVE","generalComments":"bench %d %d"}',
    code, string.sub(code, 1, 2), counter, math.random(1e9))
  return wrk.format("PUT", "/api/rest/1.0/ports/" .. code,
    {["Authorization"] = "Bearer " .. c.key, ["Content-Type"] = "application/json"}, body)
end
done = c.done
