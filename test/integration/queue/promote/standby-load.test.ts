/**
 * What standbys cost while the leader promotes (docs/operations.md): a
 * look per due time they know of (or watch that fired), at most four looks a second,
 * each a few listings. Here a leader and five standbys watch a queue whose
 * delayed jobs come due one after another; each standby's requests stay
 * within four looks a second of a handful of requests each, whatever the
 * number of standbys (no herd looping on the due times).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { leaderAndStandbys } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const STANDBYS = 5;
const DUE_TIMES = 6;
/** Requests of one look at most: the clock, `delayed/`, a day, an hour, its bucket, the schedulers' check. */
const PER_LOOK = 6;

test('five standbys beside a working leader: each within four looks a second, no herd', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('standby-load', env);
  t.after(() => queue.close());
  const members = await leaderAndStandbys(t, env, 'standby-load', STANDBYS);

  const before = members.map((m) => m.session.stats.requests);
  const from = performance.now();
  for (let i = 0; i < DUE_TIMES; i++) {
    const job = await queue.add('later', { i }, { delay: 400 });
    await waitFor(async () => (await queue.getJobState(job.id)) === 'waiting', { what: `job ${i} promoted` });
  }
  const seconds = (performance.now() - from) / 1000;
  const standbys = members.slice(1).map((m, i) => m.session.stats.requests - (before[i + 1] as number));
  t.diagnostic(`${seconds.toFixed(1)} s: standbys sent ${standbys.join(', ')} requests`);
  const bound = Math.ceil((seconds + 1) * 4) * PER_LOOK;
  for (const [i, n] of standbys.entries())
    assert.ok(n <= bound, `standby ${i + 1} sent ${n} requests (bound ${bound})`);
});
