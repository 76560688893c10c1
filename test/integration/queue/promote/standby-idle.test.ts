/**
 * What a standby costs on an idle queue (no delayed job, no scheduler): it
 * follows the watches its looks set, as the leader does, and looks unwoken
 * only as it checks the schedulers, every 10 s; it polled every 2 s (22
 * requests in 30 s, against 10 now, with the default session timeout). Here a leader and its
 * two standbys rest for MEASURE_MS, each standby's session requests counted:
 * fewer than one per POLL_MS.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaderAndStandbys } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';

const MEASURE_MS = 30_000;
/** How often a standby polled before. */
const POLL_MS = 2000;
/** The default session timeout (the Backstop's reads come about every 10 s). */
const SESSION_MS = 30_000;

test('an idle queue: each standby sends fewer requests than one per 2 s', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const members = await leaderAndStandbys(t, env, 'standby-idle', 2);
  await new Promise((resolve) => setTimeout(resolve, 1000)); // past their first looks
  const before = members.map((m) => m.session.stats.requests);
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  const sent = members.map((m, i) => m.session.stats.requests - (before[i] as number));
  t.diagnostic(`${MEASURE_MS / 1000} s idle: leader ${sent[0]}, standbys ${sent.slice(1).join(', ')} requests`);
  for (const [i, n] of sent.slice(1).entries()) {
    assert.ok(n < MEASURE_MS / POLL_MS, `standby ${i + 1} sent ${n} requests, fewer than ${MEASURE_MS / POLL_MS}`);
  }
});
