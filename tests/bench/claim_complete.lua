-- wrk -t2 -c16 -d10s -s tests/bench/claim_complete.lua http://127.0.0.1:8000
-- A worker's round trip: POST /jobs/claim, then POST /jobs/{id}/complete for the job it got.
-- Each wrk thread is one worker; a claimed id waits in `held` until some connection completes it.
-- Round trips are counted by the driver (tests/bench/api_load.py) as jobs completed in the database.
local held = {}
local worker = "bench-wrk"

request = function()
  local id = table.remove(held)
  if id then
    return wrk.format("POST", "/jobs/" .. id .. "/complete",
      {["Content-Type"] = "application/json"}, '{"worker_id": "' .. worker .. '"}')
  end
  return wrk.format("POST", "/jobs/claim", {["Content-Type"] = "application/json"},
    '{"worker_id": "' .. worker .. '"}')
end

response = function(status, headers, body)
  if status == 200 then
    local id = body:match('^{"id":(%d+),')
    if id and body:find('"status":"running"', 1, true) then
      table.insert(held, id)
    end
  end
end
