-- GET the 64 MiB attachment.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local path = os.getenv("BENCH_CONTENT")
request = function()
  return wrk.format("GET", path, {["Authorization"] = "Bearer " .. c.key})
end
done = c.done
