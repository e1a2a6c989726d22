-- A search page of 200 with a country filter (countries with many ports).
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
local countries = {"US", "GB", "DE", "IT", "NO", "SE", "FR", "ES", "GR", "JP", "CN", "BR", "NL", "PH", "ID"}
setup = c.setup
init = c.init
request = function()
  local country = countries[math.random(#countries)]
  return wrk.format("GET", "/api/rest/1.0/ports?resultsPerPage=200&countryCode=" .. country,
    {["Authorization"] = "Bearer " .. c.key})
end
done = c.done
