-- The HTTP floor: a plain GET.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local c = require("common")
done = c.done
