-- GET one port by a random code of the full UN/LOCODE list.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local codes = c.lines(os.getenv("BENCH_CODES"))
setup = c.setup
init = c.init
request = function()
  local code = codes[math.random(#codes)]
  return wrk.format("GET", "/api/rest/1.0/ports/" .. code, {["Authorization"] = "Bearer " .. c.key})
end
done = c.done
