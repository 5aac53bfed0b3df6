//! The Lua scripts the shared store runs. Each is atomic in Redis: no other host's command
//! runs between its reads and its writes. They are loaded once and then called by their
//! SHA-1 hash (`EVALSHA`, falling back to `EVAL` once if the server forgot them).
//!
//! Time is Redis's own (`TIME`), in microseconds, so the hosts' clocks need not agree.
//! Paces and bursts arrive from the host in nanoseconds and are used as microseconds with a
//! fraction: a Lua number is a double, exact to well under a microsecond at today's epoch.
//!
//! A quota's key is a hash: `tat` (its theoretical arrival time), and, when a host learned a
//! tighter limit from a response, `li`/`lt`/`lx` (that pace, that burst, and until when it
//! is believed). A key the store does not know starts with an empty burst (`tat = now +
//! burst`): after a restart that lost the state, the provider may still count what was
//! sent before it.

/// How long a learned limit is believed without a response repeating it: 10 minutes.
pub(super) const LEARNED_FOR_US: u64 = 600_000_000;

/// How long an idle quota's state is kept after its schedule ends: one hour. A quota idle
/// that long is full again; forgetting it costs at most its burst.
pub(super) const IDLE_KEEP_MS: u64 = 3_600_000;

/// How soon a call refused for want of a slot looks again: 50 ms.
pub(super) const SLOT_POLL_US: u64 = 50_000;

/// The start of every script that reads the time: `now`, Redis's, in microseconds.
macro_rules! now {
    () => {
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
"
    };
}

/// What the scripts that charge quotas share: `now`, and how a quota's pace in force is read,
/// a new quota started, a learned limit written down and a charge corrected. Written once, so the
/// scripts cannot come to disagree on them.
macro_rules! quotas {
    () => {
        concat!(
            now!(),
            r"
-- Writes down a limit a response taught: believed for `learned_for`.
local function learn(key, interval, tol, learned_for)
  redis.call('HSET', key, 'li', interval, 'lt', tol, 'lx', now + learned_for)
end

-- The pace and burst in force for a quota, `h` its 'tat', 'li', 'lt', 'lx': a slower pace
-- learned earlier and still believed, else the one given.
local function in_force(h, interval, tol)
  if h[4] and tonumber(h[4]) > now and tonumber(h[2]) > interval then
    return tonumber(h[2]), tonumber(h[3])
  end
  return interval, tol
end

-- The pace and burst a call charges a quota at: as given, and written down, when the call's
-- response taught them (`learned`); else the ones in force.
local function pace(key, h, interval, tol, learned, learned_for)
  if learned == '1' then
    learn(key, interval, tol, learned_for)
    return interval, tol
  end
  return in_force(h, interval, tol)
end

-- A quota unknown here: an empty burst, kept, so that waiting for it ends. Returns its tat.
local function start(key, tol, keep)
  local tat = now + tol
  redis.call('HSET', key, 'tat', tat)
  redis.call('PEXPIRE', key, math.ceil(tol / 1000) + keep)
  return tat
end

-- Corrects a charge by `change` units (actual use less the estimate) at `interval`: use
-- above the estimate is charged now; use below it is given back from the charge's own place
-- in the schedule, which ends at `ends`, but never to before now, and never more than that
-- place still ahead (a window must not see more than the limit). Returns the new tat.
local function correct(key, tat, change, interval, ends)
  if change > 0 then
    tat = math.max(tat, now) + change * interval
    redis.call('HSET', key, 'tat', tat)
  elseif change < 0 then
    local back = math.min(-change * interval, math.max(0, ends - now), math.max(0, tat - now))
    if back > 0 then
      tat = tat - back
      redis.call('HSET', key, 'tat', tat)
    end
  end
  return tat
end
"
        )
    };
}

/// Checks and charges every quota, hold and concurrency limit of one call.
///
/// KEYS: the quotas (`nb`), the holds (`nh`), the lease sets (`nc`).
/// ARGV: lease id, lease ttl (µs), nb, nh, nc, learned-for (µs), idle-keep (ms), slot poll
/// (µs); then per quota: interval (ns), tolerance (ns), cost, learned (0/1); then per lease
/// set: its limit.
///
/// Returns `{verdict, index, wait_us, reason, ends...}`: verdict 0 admitted (with each
/// quota's schedule end, µs, for the correction), 1 a quota is spent (index of the quota),
/// 2 held (index of the hold, its reason), 3 every slot taken (index of the set; look again
/// after the slot poll, or when the first lease expires if sooner).
pub(super) const ADMIT: &str = concat!(
    quotas!(),
    r"
local lease, ttl = ARGV[1], tonumber(ARGV[2])
local nb, nh, nc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local learned_for, keep = tonumber(ARGV[6]), tonumber(ARGV[7])
local poll = tonumber(ARGV[8])
for i = 1, nh do
  local ms = redis.call('PTTL', KEYS[nb + i])
  if ms > 0 then
    return {2, i, ms * 1000, redis.call('GET', KEYS[nb + i]) or ''}
  end
end
local a, wait, worst, plan = 9, 0, 0, {}
for i = 1, nb do
  local interval, tol = tonumber(ARGV[a]) / 1000, tonumber(ARGV[a + 1]) / 1000
  local cost, learned = tonumber(ARGV[a + 2]), ARGV[a + 3]
  a = a + 4
  local h = redis.call('HMGET', KEYS[i], 'tat', 'li', 'lt', 'lx')
  interval, tol = pace(KEYS[i], h, interval, tol, learned, learned_for)
  local tat = tonumber(h[1]) or start(KEYS[i], tol, keep)
  -- Fits when the schedule, charged, runs at most the burst ahead of now. From `tat`, not
  -- `max(tat, now)`: a cost above the burst fits once the quota has been idle long enough
  -- to pay for the excess (as `Rate::ready_at`).
  local at = tat + cost * interval - tol
  if at - now > wait then
    wait, worst = at - now, i
  end
  plan[i] = math.max(tat, now) + cost * interval
end
if wait > 0 then
  return {1, worst, math.ceil(wait), ''}
end
for i = 1, nc do
  local k = KEYS[nb + nh + i]
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  if redis.call('ZCARD', k) >= tonumber(ARGV[a + i - 1]) then
    -- A slot frees when a call ends, usually long before its lease expires: look again
    -- soon, at most when the first lease expires.
    local first = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    return {3, i, math.max(1, math.min(poll, math.ceil(tonumber(first[2]) - now))), ''}
  end
end
local out = {0, 0, 0, ''}
for i = 1, nb do
  redis.call('HSET', KEYS[i], 'tat', plan[i])
  redis.call('PEXPIRE', KEYS[i], math.ceil((plan[i] - now) / 1000) + keep)
  out[4 + i] = math.floor(plan[i])
end
for i = 1, nc do
  local k = KEYS[nb + nh + i]
  redis.call('ZADD', k, now + ttl, lease)
  redis.call('PEXPIRE', k, math.ceil(ttl / 1000) * 2)
end
return out
",
);

/// Takes slices of a host's quotas, and settles what the host's earlier slices left.
///
/// KEYS: the quotas (`nb`), the holds of the scopes asked for (`nh`).
/// ARGV: nb, nh, learned-for (µs), idle-keep (ms), reserve (µs: how long a slice may be
/// used); then per quota: interval (ns), tolerance (ns), learned (0/1), need, want, change,
/// ends (µs).
///
/// Per quota, first `change` settles an earlier slice: what the host used above its
/// estimates is charged now (positive), what it left unused is given back (negative) from
/// that slice's place in the schedule, `ends`, as [`SETTLE`] does. Then, when any `need`
/// is above 0, the holds are checked and each quota asked for must fit `need` within its
/// burst less the reserve (a slice's units are sent up to the reserve after it starts, so
/// a window sees no more than the limit); each then grants between `need` and `want`, as
/// much as fits. A need that fits within the reserve from now is granted at once, to
/// start when it fits: hosts at the pace's edge queue in the store, in the order they
/// asked, instead of polling it.
///
/// Returns `{verdict, index, wait_us, reason, grant, end, grant, end...}`: verdict 0
/// granted (wait: when the slices start; per quota, what it granted and the schedule end),
/// 1 a quota cannot fit its need within the reserve yet (index of the quota; wait: when to
/// ask again), 2 held (index of the hold, its reason).
pub(super) const SLICE: &str = concat!(
    quotas!(),
    r"
local nb, nh = tonumber(ARGV[1]), tonumber(ARGV[2])
local learned_for, keep, reserve = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local q, asked = {}, false
local a = 6
for i = 1, nb do
  local e = {
    interval = tonumber(ARGV[a]) / 1000, tol = tonumber(ARGV[a + 1]) / 1000,
    learned = ARGV[a + 2], need = tonumber(ARGV[a + 3]), want = tonumber(ARGV[a + 4]),
    change = tonumber(ARGV[a + 5]), ends = tonumber(ARGV[a + 6]),
  }
  a = a + 7
  local h = redis.call('HMGET', KEYS[i], 'tat', 'li', 'lt', 'lx')
  e.interval, e.tol = pace(KEYS[i], h, e.interval, e.tol, e.learned, learned_for)
  local tat = tonumber(h[1])
  if tat then
    tat = correct(KEYS[i], tat, e.change, e.interval, e.ends)
  elseif e.need > 0 then
    tat = start(KEYS[i], e.tol, keep)
  end
  e.tat = tat
  if e.need > 0 then
    asked = true
  end
  q[i] = e
end
if not asked then
  return {0, 0, 0, ''}
end
for i = 1, nh do
  local ms = redis.call('PTTL', KEYS[nb + i])
  if ms > 0 then
    return {2, i, ms * 1000, redis.call('GET', KEYS[nb + i]) or ''}
  end
end
local wait, worst = 0, 0
for i = 1, nb do
  local e = q[i]
  if e.need > 0 then
    local tol = e.tol - reserve
    -- From `tat`, not `max(tat, now)`, as in ADMIT: a need above the burst fits once the
    -- quota has been idle long enough to pay for the excess.
    local at = e.tat + e.need * e.interval - tol
    if at - now > wait then
      wait, worst = at - now, i
    end
  end
end
if wait > reserve then
  -- Ask again when a slice fits within one slice's life.
  return {1, worst, math.ceil(wait - reserve), ''}
end
-- Granted as of `now + wait`: its units are sent from then on, in the host's order of
-- asking rather than whoever polls first.
local from_time = now + wait
local out = {0, 0, math.ceil(wait), ''}
for i = 1, nb do
  local e = q[i]
  local grant, ends = 0, 0
  if e.need > 0 then
    local from = math.max(e.tat, now)
    local fits = math.floor((from_time + e.tol - reserve - from) / e.interval)
    grant = math.max(e.need, math.min(e.want, fits))
    ends = from + grant * e.interval
    redis.call('HSET', KEYS[i], 'tat', ends)
    redis.call('PEXPIRE', KEYS[i], math.ceil((ends - now) / 1000) + keep)
  end
  out[3 + 2 * i] = grant
  out[4 + 2 * i] = math.floor(ends)
end
return out
",
);

/// Ends a call: releases its leases and corrects its charge to its actual usage.
///
/// KEYS: the quotas (`nb`), the lease sets (`nc`).
/// ARGV: lease id, nb, nc; then per quota: interval (ns), change (actual − estimate, may be
/// negative), the call's schedule end (µs, from [`ADMIT`]).
///
/// Use above the estimate is charged now. Use below it is given back from the call's own
/// place in the schedule, but never to before now, and never more than the call's place
/// still ahead: a window must not see more than the limit.
pub(super) const SETTLE: &str = concat!(
    quotas!(),
    r"
local lease, nb, nc = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local a = 4
for i = 1, nb do
  local interval, change, ends = tonumber(ARGV[a]) / 1000, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  a = a + 3
  local h = redis.call('HMGET', KEYS[i], 'tat', 'li', 'lt', 'lx')
  local tat = tonumber(h[1])
  if tat then
    -- At the pace the call was charged at: a learned one, when it is in force and slower.
    correct(KEYS[i], tat, change, (in_force(h, interval, 0)), ends)
  end
end
for i = 1, nc do
  redis.call('ZREM', KEYS[nb + i], lease)
end
return 1
",
);

/// Shares what a response taught one host about a scope: a hold, what is left, a limit.
///
/// KEYS: the hold, then the quotas (`nb`).
/// ARGV: hold (µs, 0 for none), its reason, nb, learned-for (µs), idle-keep (ms); then per
/// quota: interval (ns), tolerance (ns), available (units; -1: unknown), learned (0/1).
///
/// A hold only lengthens (as a local hold does) and restarts the quota at its pace with an
/// empty burst; `available` only takes (a quota believed fuller than the provider says is
/// debited, never refilled).
pub(super) const SHARE: &str = concat!(
    quotas!(),
    r"
local hold, reason, nb = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local learned_for, keep = tonumber(ARGV[4]), tonumber(ARGV[5])
if hold > 0 then
  local left = redis.call('PTTL', KEYS[1])
  if left < hold / 1000 then
    redis.call('SET', KEYS[1], reason, 'PX', math.ceil(hold / 1000))
  end
end
local a = 6
for i = 1, nb do
  local k = KEYS[1 + i]
  local interval, tol = tonumber(ARGV[a]) / 1000, tonumber(ARGV[a + 1]) / 1000
  local available, learned = tonumber(ARGV[a + 2]), ARGV[a + 3]
  a = a + 4
  if learned == '1' then
    learn(k, interval, tol, learned_for)
  end
  local tat = tonumber(redis.call('HGET', k, 'tat')) or (now + tol)
  local target = tat
  if hold > 0 then
    target = math.max(target, now + hold + tol - interval)
  end
  if available >= 0 then
    target = math.max(target, now + tol - available * interval)
  end
  redis.call('HSET', k, 'tat', target)
  redis.call('PEXPIRE', k, math.ceil(math.max(0, target - now) / 1000) + keep)
end
return 1
",
);

/// Keeps a host's leases alive, or puts them back after the store lost them.
///
/// KEYS: lease sets, one per lease. ARGV: ttl (µs), mode (`renew`: only leases still
/// there, so a lease its call released meanwhile stays released; `restore`: every one),
/// then the lease ids in KEYS' order.
pub(super) const RENEW: &str = concat!(
    now!(),
    r"
local ttl, restore = tonumber(ARGV[1]), ARGV[2] == 'restore'
for i = 1, #KEYS do
  if restore then
    redis.call('ZADD', KEYS[i], now + ttl, ARGV[2 + i])
  else
    redis.call('ZADD', KEYS[i], 'XX', now + ttl, ARGV[2 + i])
  end
  redis.call('PEXPIRE', KEYS[i], math.ceil(ttl / 1000) * 2)
end
return #KEYS
",
);

/// Says this process is alive under its host id, unless another process says so.
///
/// KEYS: the host's key. ARGV: this process's nonce, ttl (ms). Returns nothing, or the
/// nonce of the other process that holds the id.
pub(super) const HEARTBEAT: &str = r"
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then
  return v
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
";

/// Claims an action for a host, in the ownership epoch the host joined (see
/// [`super::ownership`]).
///
/// KEYS: the action's claim, the epoch, the epoch an operator recovered. ARGV: the host, the
/// claim's ttl (ms), the epoch the host joined (`''`: none yet), a new epoch token (set when
/// the store has none and the host joined none). Returns `{'lost'}` when the store's epoch
/// is missing or another one no operator set; else `{'ok', epoch, owner}`, the owner `''`
/// when the claim is new.
pub(super) const CLAIM: &str = r"
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  if ARGV[3] ~= '' then
    return {'lost'}
  end
  return {'uninitialized'}
elseif ARGV[3] ~= '' and epoch ~= ARGV[3] then
  if redis.call('GET', KEYS[3]) ~= epoch then
    return {'lost'}
  end
end
local owner = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET', 'PX', ARGV[2])
if not owner then
  owner = ''
end
return {'ok', epoch, owner}
";
