-- Registration of every function (each wakes claimers when it made trials claimable).
-- Every function is registered through `waking`: a call that made trials
-- claimable (wake_pending) adds one entry to the wake stream, however many it
-- queued.
local function waking(fn)
  return function(keys, a)
    wake_pending = false
    local out = fn(keys, a)
    if wake_pending then
      wake_pending = false
      redis.call('XADD', a[1] .. 'wake', 'MAXLEN', '~', '100', '*', 'q', '1')
    end
    return out
  end
end

local function register(name, fn) redis.register_function('hpo_' .. name, waking(fn)) end

register('create_sweep', create_sweep)
register('import_sweep', import_sweep)
register('create_trial', create_trial)
register('create_trials', create_trials)
register('claim', claim)
register('claim_batch', claim_batch)
register('heartbeat', heartbeat)
register('heartbeat_batch', heartbeat_batch)
register('report', report)
register('complete', complete)
register('complete_batch', complete_batch)
register('reap', reap)
register('release', release)
register('put_artifact', put_artifact)
register('put_record', put_record)
register('put_sweep_record', put_sweep_record)
register('worker_leases', worker_leases)
register('delete_sweep', delete_sweep)
register('cancel_sweep', cancel_sweep)
register('finish_sweep', finish_sweep)
register('set_stage', set_stage)
register('set_control', set_control)
register('put_worker', put_worker)
register('remove_worker', remove_worker)
register('rank_heartbeat', rank_heartbeat)
register('release_gang', release_gang)
register('publish_rendezvous', publish_rendezvous)
register('rendezvous', rendezvous)
register('set_unschedulable', set_unschedulable)
register('list_workers', list_workers)
