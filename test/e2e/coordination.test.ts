/** zkq barrier, zkq lock, zkq leader: processes coordinating through ZooKeeper. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BatchBarrier, LeaderElection, Session } from '@zkq/core';
import { waitFor } from '../helpers/zk.js';
import { type CliEnv, cliEnv, within, ZkqProcess, zkq, zkqJson } from './cli.js';

async function session(t: { after(fn: () => unknown): void }, env: CliEnv): Promise<Session> {
  const s = await Session.connect({ connectionString: env.zk, namespace: `/${env.namespace}` });
  t.after(() => s.close());
  return s;
}

test('barrier: nobody passes before the third member joins; then all exit 0', async (t) => {
  const env = await cliEnv(t);
  const zk = await session(t, env);
  const join3 = () => new ZkqProcess(['barrier', 'start-line', '--members', '3', ...env.global]);
  const first = [join3(), join3()];
  t.after(() => Promise.all(first.map((p) => p.dispose())));
  await waitFor(
    async () =>
      (await zk.getChildren('/_barriers/start-line').catch(() => [])).filter((n) => n.startsWith('member-')).length ===
      2,
    { timeoutMs: 60_000, what: 'two members at the barrier' },
  );
  assert.ok(
    first.every((p) => p.running),
    'two members wait',
  );
  assert.equal(await zk.exists('/_barriers/start-line/start'), null);

  const third = join3();
  t.after(() => third.dispose());
  const results = await within(Promise.all([...first, third].map((p) => p.exited)), 60_000, 'all three to pass');
  for (const r of results) {
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'barrier start-line: all 3 members joined\n');
  }
});

test('barrier --timeout gives up with exit 7 and leaves no member behind', async (t) => {
  const env = await cliEnv(t);
  const r = await zkq(['barrier', 'lonely', '--members', '2', '--timeout', '300', ...env.global]);
  assert.equal(r.code, 7);
  assert.match(r.stderr, /^zkq: barrier \/_barriers\/lonely timed out after 300 ms$/m);
  const zk = await session(t, env);
  assert.deepEqual(await zk.getChildren('/_barriers/lonely'), []);
});

test("barrier --queue: joins a queue's worker batch barrier batch by batch, and --reset reaches it", async (t) => {
  const env = await cliEnv(t);
  const zk = await session(t, env);
  const path = '/crunch/barriers/nightly';
  const worker = new BatchBarrier(zk, path, { size: 2, id: 'worker' });
  const join = () => new ZkqProcess(['barrier', 'nightly', '--queue', 'crunch', '--members', '2', ...env.global]);
  for (let night = 1; night <= 2; night++) {
    const shell = join();
    t.after(() => shell.dispose());
    await waitFor(async () => (await zk.getChildren(path).catch(() => [])).some((n) => n.startsWith('member-')), {
      timeoutMs: 60_000,
      what: `the shell member of night ${night}`,
    });
    await worker.enter({ timeout: 60_000 });
    const r = await within(shell.exited, 60_000, `night ${night}`);
    assert.equal(r.code, 0, r.stderr);
    await worker.leave();
  }
  assert.ok(await zk.exists(`${path}/released`));
  const reset = await zkq(['barrier', 'nightly', '--queue', 'crunch', '--reset', ...env.global]);
  assert.equal(reset.code, 0, reset.stderr);
  assert.equal(await zk.exists(`${path}/released`), null);
  assert.equal((await zkq(['barrier', 'nightly', '--queue', 'bad:name', '--reset', ...env.global])).code, 2);
});

test('lock: two commands under the same lock never overlap, and each exit code is passed on', async (t) => {
  const env = await cliEnv(t);
  const dir = mkdtempSync(join(tmpdir(), 'zkq-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'trace');
  const section = (who: string, code: number) =>
    new ZkqProcess([
      'lock',
      'report',
      ...env.global,
      '--',
      'sh',
      '-c',
      `echo "start ${who}" >> ${file}; sleep 1; echo "end ${who}" >> ${file}; exit ${code}`,
    ]);
  const a = section('a', 0);
  const b = section('b', 3);
  t.after(() => Promise.all([a.dispose(), b.dispose()]));
  const [ra, rb] = await within(Promise.all([a.exited, b.exited]), 60_000, 'both locked commands');
  assert.equal(ra.code, 0, ra.stderr);
  assert.equal(rb.code, 3, rb.stderr);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  assert.equal(lines.length, 4);
  for (let i = 0; i < 4; i += 2) {
    const who = lines[i]?.split(' ')[1];
    assert.deepEqual([lines[i], lines[i + 1]], [`start ${who}`, `end ${who}`], `no overlap: ${lines.join(' | ')}`);
  }
  assert.notEqual(lines[0], lines[2]);

  const missing = await zkq(['lock', 'report', ...env.global, '--', 'no-such-command-zkq']);
  assert.equal(missing.code, 127);
  assert.equal(missing.stderr, "zkq: cannot run 'no-such-command-zkq': command not found\n");
  const none = await zkq(['lock', 'report', ...env.global]);
  assert.equal(none.code, 2);
});

test("leader prints the id of the queue's elected leader, or none", async (t) => {
  const env = await cliEnv(t);
  assert.equal((await zkq(['leader', 'elect', ...env.global])).code, 8, 'no such queue yet');
  assert.equal((await zkq(['add', 'elect', 'x', ...env.global])).code, 0);
  assert.equal((await zkq(['leader', 'elect', ...env.global])).stdout, 'none\n');
  const zk = await session(t, env);
  const first = new LeaderElection(zk, '/elect/leader', { id: 'worker-a' });
  const second = new LeaderElection(zk, '/elect/leader', { id: 'worker-b' });
  t.after(async () => {
    await first.close();
    await second.close();
  });
  await first.start();
  await first.waitUntilLeader({ timeout: 30_000 });
  await second.start();
  assert.deepEqual(await zkqJson(['leader', 'elect', ...env.global]), { queue: 'elect', leader: 'worker-a' });
  await first.resign();
  await second.waitUntilLeader({ timeout: 30_000 });
  assert.equal((await zkq(['leader', 'elect', ...env.global])).stdout, 'worker-b\n');
  assert.equal((await zkqJson(['stats', 'elect', ...env.global])).leader, 'worker-b');
});

test("leader and stats name the worker that leads the queue's housekeeping; --no-housekeeping never leads", async (t) => {
  const env = await cliEnv(t);
  const worker = (name: string, ...extra: string[]) =>
    new ZkqProcess([
      'worker',
      'kept',
      '--processor',
      'examples/processors/demo.js',
      '--name',
      name,
      ...extra,
      ...env.global,
    ]);
  const follower = worker('never-leads', '--no-housekeeping');
  t.after(() => follower.dispose());
  await follower.waitForLine(/worker ready/);
  const leader = worker('leads');
  t.after(() => leader.dispose());
  await leader.waitForLine(/worker ready/);
  await waitFor(async () => (await zkq(['leader', 'kept', ...env.global])).stdout === 'leads\n', {
    timeoutMs: 60_000,
    what: 'the housekeeping leader',
  });
  const stats = await zkqJson(['stats', 'kept', ...env.global]);
  assert.equal(stats.leader, 'leads');
  assert.deepEqual(
    stats.workers.map((w: { id: string }) => w.id),
    ['leads', 'never-leads'],
  );
  follower.kill('SIGTERM');
  leader.kill('SIGTERM');
  const results = await within(Promise.all([follower.exited, leader.exited]), 60_000, 'workers exit');
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  assert.equal((await zkq(['leader', 'kept', ...env.global])).stdout, 'none\n');
});
