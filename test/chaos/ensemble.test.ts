/**
 * A 3-server ensemble: killing the leader (SIGKILL) does not interrupt a
 * client that knows all three servers, no acknowledged write is lost, and
 * the killed server restarts and catches up. Light on purpose: three JVMs
 * share two cores with other test runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isOutcomeUnknown, NodeExistsError, Session } from '@zkq/core';
import { startEnsemble, type ZooKeeperProcess } from '@zkq/testing';
import { waitFor } from '../helpers/zk.js';

const WRITES = 150;
const OP_DEADLINE_MS = 60_000;

/**
 * Runs one write until it is known to be applied. Only the documented
 * outcome-unknown errors (connection loss, request timeout) are retried, and
 * after one the node is looked up first: the write is a create of a known
 * path with known data, so whether it was applied can be checked.
 */
async function writeOnce(s: Session, path: string, data: Buffer): Promise<number> {
  const deadline = Date.now() + OP_DEADLINE_MS;
  let retries = 0;
  for (;;) {
    try {
      await s.create(path, data);
      return retries;
    } catch (err) {
      if (err instanceof NodeExistsError && retries > 0) {
        assert.deepEqual((await s.getData(path)).data, data, 'a write applied before its reply was lost');
        return retries;
      }
      if (!isOutcomeUnknown(err) || Date.now() > deadline) throw err;
      retries++;
    }
  }
}

async function leaderOf(servers: readonly ZooKeeperProcess[]): Promise<ZooKeeperProcess> {
  return waitFor(
    async () => {
      for (const s of servers) if ((await s.mode()) === 'leader') return s;
      return undefined;
    },
    { timeoutMs: 60_000, what: 'a leader' },
  );
}

test('ensemble: SIGKILL of the leader mid-stream loses nothing; the server restarts and rejoins', async (t) => {
  const ensemble = await startEnsemble({ heapMb: 192, startTimeoutMs: 120_000 });
  t.after(() => ensemble.stop());
  const s = await Session.connect({
    connectionString: ensemble.connectionString,
    namespace: '/chaos',
    sessionTimeout: 30_000,
    requestTimeout: 15_000,
    retry: { maxAttempts: 30, deadlineMs: OP_DEADLINE_MS, maxDelayMs: 1000 },
  });
  t.after(() => s.close());
  const states: string[] = [];
  s.on('state', (st) => states.push(st));
  await s.create('/stream');

  const victim = await leaderOf(ensemble.servers);
  let retried = 0;
  let killed: Promise<void> | undefined;
  for (let i = 0; i < WRITES; i++) {
    if (i === WRITES / 3) killed = victim.stop();
    const path = `/stream/n-${String(i).padStart(4, '0')}`;
    const data = Buffer.from(`value-${i}`);
    retried += await writeOnce(s, path, data);
    // Read-your-write through the same session, also across the failover.
    assert.deepEqual((await s.getData(path)).data, data);
  }
  await killed;
  assert.equal(victim.running, false);

  // The survivors hold every write.
  const names = (await s.getChildren('/stream')).sort();
  assert.equal(names.length, WRITES);
  assert.equal(names[WRITES - 1], `n-${String(WRITES - 1).padStart(4, '0')}`);
  assert.ok(!states.includes('lost'), `the session survived the failover (states: ${states.join(', ')})`);
  t.diagnostic(`states: ${states.join(', ') || '(none)'}; writes retried: ${retried}`);

  // The killed server restarts on its data and catches up with the quorum.
  await victim.restart();
  const mode = await victim.mode();
  assert.ok(mode === 'follower' || mode === 'leader', `restarted as ${mode}`);
  const direct = await Session.connect({ connectionString: victim.connectionString, namespace: '/chaos' });
  t.after(() => direct.close());
  await waitFor(async () => (await direct.getChildren('/stream')).length === WRITES, {
    timeoutMs: 60_000,
    what: 'the restarted server to have every write',
  });
  assert.equal((await direct.getData('/stream/n-0149')).data.toString(), 'value-149');
  // And it serves writes again, seen by the rest of the ensemble.
  await direct.create('/after-rejoin');
  await waitFor(async () => (await s.exists('/after-rejoin')) !== null, {
    what: 'the write through the rejoined server',
  });
});
