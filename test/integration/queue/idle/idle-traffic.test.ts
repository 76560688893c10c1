/**
 * What idle workers cost the server: only the front of the queue polls
 * (the housekeeping leader, its two standbys, the first two idle workers
 * in line); every other idle worker sends one Backstop read about every
 * third of its session timeout, in place of its session's own probe.
 * Counted on the workers' sessions over sixteen idle polls (drainDelay
 * 250 ms) with a 30 s session (a Backstop read every 9.5 s): before, every
 * worker further back in line read the line at each idle poll and every
 * non-leader looked at the delayed jobs every 2 s, some thirty requests
 * each over the window.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { testSession, waitFor } from '../../../helpers/zk.js';

const WORKERS = 10;
const SESSION_MS = 30_000;
/** The Backstop's period on such a session: a third of its timeout less half a second. */
const BACKSTOP_MS = SESSION_MS / 3 - 500;
const POLL_MS = 250;
const POLLS = 16;
/** Workers that may poll: the leader, two standbys, the first two in line (some may be the same). */
const FRONT = 5;

test('idle workers further back than the front send only their Backstop read, whatever the idle poll', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const workers = Array.from({ length: WORKERS }, (_, i) => {
    const w = new Worker('idle-traffic', async () => undefined, { ...env, drainDelay: POLL_MS / 1000, name: `w${i}` });
    t.after(() => w.close());
    return w;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  await waitFor(async () => (await look.getChildren('/idle-traffic/idle').catch(() => [])).length === WORKERS, {
    what: 'every worker idle in line',
  });
  await sleep(4 * POLL_MS); // the line settles: each worker has looked where it stands
  const sessions = await Promise.all(workers.map((w) => w.client));
  const before = sessions.map((s) => s.stats.requests);
  await sleep(POLLS * POLL_MS);
  const sent = sessions.map((s, i) => s.stats.requests - (before[i] as number)).sort((a, b) => b - a);
  t.diagnostic(`requests over ${POLLS} idle polls, most first: ${sent.join(', ')}`);
  // Backstop reads in the window, one more if the window straddles two; a probe takes a read's place
  const allowed = Math.ceil((POLLS * POLL_MS) / BACKSTOP_MS) + 1;
  for (const [i, n] of sent.slice(FRONT).entries()) {
    assert.ok(
      n <= allowed,
      `worker ${i + FRONT + 1} of ${WORKERS} (by requests) sent ${n} requests over ${POLLS} idle polls ` +
        `(${(n / POLLS).toFixed(2)} per poll), at most ${allowed}`,
    );
  }
});
