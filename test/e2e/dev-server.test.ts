/** zkq dev-server and zkq demo: the local ZooKeeper and the one-command demo. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { within, ZkqProcess, zkq, zkqJson } from './cli.js';

test('dev-server prints its address and export line, serves, and stops cleanly on SIGTERM', async (t) => {
  const server = new ZkqProcess(['dev-server', '--port', '0']);
  t.after(() => server.dispose());
  const exportLine = await server.waitForLine(/^export ZKQ_ZK=/, 120_000);
  const zk = exportLine.slice('export ZKQ_ZK='.length);
  assert.match(zk, /^127\.0\.0\.1:\d+$/);
  assert.ok(server.lines.includes(`ZooKeeper server is serving at ${zk}`));
  const added = await zkqJson(['add', 'dev', 'x', `--zk=${zk}`]);
  assert.equal((await zkqJson(['stats', 'dev', `--zk=${zk}`])).counts.waiting, 1, `job ${added.id} is there`);
  server.kill('SIGTERM');
  const r = await within(server.exited, 60_000, 'dev-server exit');
  assert.equal(r.code, 0, r.stderr);
  const after = await zkq(['stats', 'dev', `--zk=${zk}`, '--connect-timeout=1000']);
  assert.equal(after.code, 3, 'the server is gone');
});

test('dev-server says what it is about to install first, and installs nothing with --no-install', async () => {
  // An empty ZOOKEEPER_HOME: ZooKeeper is "missing", and the install script only reports (no apt-get).
  const env = { ZOOKEEPER_HOME: mkdtempSync(join(tmpdir(), 'zkq-no-zookeeper-')) };
  const said = (stderr: string) => stderr.split('\n').filter((l) => l && !l.startsWith('{')); // without log lines
  const refused = await zkq(['dev-server', '--port', '0', '--no-install'], { env });
  assert.equal(refused.code, 1, refused.stderr);
  const [line, ...more] = said(refused.stderr);
  assert.match(line ?? '', /^zkq: ZooKeeper is not installed \(and --no-install was given\): install /);
  assert.deepEqual(more, [], 'one line: the install script did not run');

  const tried = await zkq(['dev-server', '--port', '0'], { env });
  assert.equal(tried.code, 1, tried.stderr);
  const [first, ...rest] = said(tried.stderr);
  assert.match(first ?? '', /^zkq: ZooKeeper is not installed; running bash \S+install-zookeeper\.sh, which as root /);
  assert.match(rest.join('\n'), /ZOOKEEPER_HOME=\S+ holds no zookeeper-\*\.jar/, 'then the script ran');
});

test('demo --jobs 500 runs every job through two workers and exits 0', async () => {
  const r = await zkq(['demo', '--jobs', '500', '--json'], { timeoutMs: 300_000 });
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  assert.equal(summary.jobs, 500);
  assert.equal(summary.completed, 500);
  assert.equal(summary.failed, 0);
  assert.equal(summary.workers, 2);
  assert.deepEqual(Object.keys(summary.perWorker).sort(), ['demo-worker-1', 'demo-worker-2']);
  assert.equal(
    Object.values(summary.perWorker as Record<string, number>).reduce((a, b) => a + b, 0),
    500,
  );
  assert.deepEqual(summary.workerExitCodes, { 'demo-worker-1': 0, 'demo-worker-2': 0 });
  assert.ok(summary.jobsPerSecond > 0);
});

test('demo prints a readable report', async () => {
  const r = await zkq(['demo', '--jobs', '100', '--workers', '1', '--fail-every', '10'], { timeoutMs: 300_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^demo: 1 workers joined barrier 'demo' and started$/m);
  assert.match(r.stdout, /^demo: 100 jobs done in [\d.]+ s \(\d+ jobs\/s\): 90 completed, 10 failed$/m);
  assert.match(r.stdout, /^ {2}demo-worker-1\s+90\s+100\.0%$/m);
  assert.match(r.stdout, /^demo: ZooKeeper stopped$/m);
});
