-- Forgets the transitions a handler took: those before ARGV[3], unless
-- the stream is another since they were read (ARGV[2] its epoch then; a
-- Redis that lost its data starts a new one).
if redis.call('HGET', meta, 'e') ~= ARGV[2] then
  return 0
end
return redis.call('XTRIM', stream, 'MINID', ARGV[3])
