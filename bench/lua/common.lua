-- Shared by the scenarios: the session key, a list of values read from a
-- file, and a done() that prints one machine-readable RESULT line.
local M = {}

M.key = os.getenv("BENCH_KEY")

-- wrk loads the script once per thread, each in a Lua state of its own and
-- within the same second: seeded with the time alone, every thread would
-- send the same "random" requests (a PUT twice, the second changing
-- nothing). `setup` numbers the threads; `init` seeds each apart.
local threads = 0

function M.setup(thread)
  threads = threads + 1
  thread:set("bench_thread", threads)
end

function M.init()
  math.randomseed(os.time() * 1000 + (bench_thread or 0))
end

function M.lines(path)
  local items = {}
  for line in io.lines(path) do
    if line ~= "" then items[#items + 1] = line end
  end
  return items
end

function M.done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    'RESULT {"requests": %d, "rps": %.1f, "p50_ms": %.3f, "p99_ms": %.3f, "errors": %d, "non2xx": %d}\n',
    summary.requests, summary.requests / seconds, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, errors, summary.errors.status))
end

return M
