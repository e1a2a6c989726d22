-- POST a quality result under one job, one every 50 ms per connection: with
-- one connection, a site writing 20 results a second while "GET one port
-- (random code), while a client writes" reads the catalogs.
dofile(os.getenv("BENCH_LUA") .. "/post_quality.lua")
delay = function()
  return 50
end
