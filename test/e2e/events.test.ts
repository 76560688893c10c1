/** zkq events follows a queue; zkq add --wait prints the job's result or fails with its reason. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TcpProxy } from '@zkq/testing';
import { cliEnv, within, ZkqProcess, zkq } from './cli.js';

/** How long a session close may wait for the server's reply (Session.close). */
const SESSION_CLOSE_WAIT_MS = 2000;

test('events prints every event of a job; add --wait prints its result', async (t) => {
  const env = await cliEnv(t);
  // The worker makes the queue; events only reads one that exists.
  const worker = new ZkqProcess(['worker', 'ev', '--processor', 'examples/processors/demo.js', ...env.global]);
  t.after(() => worker.dispose());
  await worker.waitForLine(/worker ready/);
  const events = new ZkqProcess(['events', 'ev', '--json', ...env.global]);
  t.after(() => events.dispose());
  await events.waitForLine(/following events/, 60_000);

  const r = await zkq(['add', 'ev', 'sq', '--data', '{"n":7,"rounds":1}', '--wait', '--json', ...env.global]);
  assert.equal(r.code, 0, r.stderr);
  const done = JSON.parse(r.stdout);
  assert.equal(done.state, 'completed');
  assert.equal(done.returnvalue.square, 49);

  const completed = JSON.parse(await events.waitForLine(/"event":"completed"/, 60_000));
  assert.equal(completed.jobId, done.id);
  assert.equal(completed.returnvalue.square, 49);
  const seen = events
    .logs()
    .filter((e) => e.jobId === done.id)
    .map((e) => e.event);
  assert.ok(seen.includes('active'), seen.join(','));

  const plain = await zkq(['add', 'ev', 'sq', '--data', '{"n":3,"rounds":1}', '--wait', ...env.global]);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(JSON.parse(plain.stdout).square, 9);
  const failing = await zkq(['add', 'ev', 'boom', '--data', '{"fail":true}', '--wait', ...env.global]);
  assert.equal(failing.code, 1);
  assert.match(failing.stderr, /^zkq: job \d+ failed: job \d+ was asked to fail\n$/);

  worker.kill('SIGTERM');
  events.kill('SIGTERM');
  const [we, ee] = await within(Promise.all([worker.exited, events.exited]), 60_000, 'exits');
  assert.equal(we.code, 0, we.stderr);
  assert.equal(ee.code, 0, ee.stderr);
});

test('add --wait --timeout gives up with exit 7 when no worker runs the job', async (t) => {
  const env = await cliEnv(t);
  const r = await zkq(['add', 'idle', 'x', '--wait', '--timeout', '500', ...env.global]);
  assert.equal(r.code, 7, r.stderr);
  assert.match(r.stderr, /^zkq: waiting for job \d+ timed out after 500 ms\n$/);
});

test('events stops promptly on SIGINT, even when ZooKeeper does not answer', async (t) => {
  const env = await cliEnv(t);
  assert.equal((await zkq(['add', 'cut', 'x', ...env.global])).code, 0);
  const proxy = await TcpProxy.start(env.zk);
  t.after(() => proxy.stop());
  const events = new ZkqProcess(['events', 'cut', `--zk=${proxy.connectionString}`, `--namespace=${env.namespace}`]);
  t.after(() => events.dispose());
  await events.waitForLine(/following events/, 60_000);
  proxy.freeze(); // the session's close request will get no reply
  const sent = performance.now();
  events.kill('SIGINT');
  const r = await within(events.exited, 60_000, 'events exit');
  const took = performance.now() - sent;
  assert.equal(r.code, 0, r.stderr);
  // Not a timing test: without the fix, stopping always waits out the session's close timeout.
  assert.ok(took < SESSION_CLOSE_WAIT_MS, `stopped after ${Math.round(took)} ms`);
});
