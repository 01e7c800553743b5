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
register('artifact_room', artifact_room)
register('put_record', put_record)
register('put_sweep_record', put_sweep_record)
register('worker_leases', worker_leases)
register('delete_sweep', delete_sweep)
register('annotate', annotate)
register('set_priority', set_priority)
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
register('access_bootstrap', access_bootstrap)
register('create_user', create_user)
register('update_user', update_user)
register('list_users', list_users)
register('add_token', add_token)
register('revoke_token', revoke_token)
register('list_tokens', list_tokens)
register('resolve_token', resolve_token)
register('create_project', create_project)
register('update_project', update_project)
register('list_projects', list_projects)
register('set_member', set_member)
register('list_members', list_members)
register('audit_record', audit_record)
register('audit_read', audit_read)
register('list_sweeps_in', list_sweeps_in)
register('add_worker_token', add_worker_token)
register('list_worker_tokens', list_worker_tokens)
register('revoke_worker_token', revoke_worker_token)
register('resolve_worker_token', resolve_worker_token)
register('worker_may_read', worker_may_read)
