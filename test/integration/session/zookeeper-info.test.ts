/**
 * What the dashboard shows of the ensemble: every member of the connection
 * string with its mode, on a real 3-server ensemble, a stopped member shown
 * as unreachable.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { startEnsemble } from '@zkq/testing';
import { membersLine } from '../../../packages/cli/src/dashboard.ts';
import { zooKeeperInfo } from '../../../packages/cli/src/zookeeper-info.ts';
import { waitFor } from '../../helpers/zk.js';

test('a 3-server ensemble: one leader, two followers; a stopped one is unreachable', async (t) => {
  const ensemble = await startEnsemble();
  t.after(() => ensemble.stop());
  const info = await zooKeeperInfo(ensemble.connectionString);
  assert.ok(info, 'the servers answer their four-letter words');
  const modes = info.members.map((m) => m.mode).sort();
  assert.deepEqual(modes, ['follower', 'follower', 'leader']);
  assert.deepEqual(
    info.members.map((m) => m.server),
    ensemble.servers.map((s) => s.connectionString),
  );
  assert.match(membersLine(info), /^127\.0\.0\.1:\d+ (leader|follower), 127\.0\.0\.1:\d+ (leader|follower), /);

  const stopped = ensemble.servers[2];
  await stopped?.stop();
  await waitFor(async () => (await zooKeeperInfo(ensemble.connectionString))?.members[2]?.mode === 'unreachable', {
    timeoutMs: 20_000,
    what: 'the stopped member shown as unreachable',
  });
});

test('a negative count of outstanding requests from the server is shown as none', async (t) => {
  // ZooKeeper's own counter can read -1 for a moment under load: a server that says so
  const answers: Record<string, string> = {
    mntr: 'zk_version\t3.8.4-0, built on 2024-01-01\nzk_server_state\tstandalone\nzk_outstanding_requests\t-1\n',
    srvr: 'Zookeeper version: 3.8.4-0, built on 2024-01-01\nOutstanding: -1\nMode: standalone\n',
  };
  const server = createServer((socket) => {
    socket.once('data', (word) => socket.end(answers[word.toString().trim()] ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  const info = await zooKeeperInfo(`127.0.0.1:${port}`);
  assert.equal(info?.mode, 'standalone');
  assert.equal(info?.outstandingRequests, 0);
});
