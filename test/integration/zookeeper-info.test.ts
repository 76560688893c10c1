/**
 * What the dashboard shows of the ensemble: every member of the connection
 * string with its mode, on a real 3-server ensemble, a stopped member shown
 * as unreachable.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEnsemble } from '@zkq/testing';
import { membersLine } from '../../packages/cli/src/dashboard.ts';
import { zooKeeperInfo } from '../../packages/cli/src/zookeeper-info.ts';
import { waitFor } from '../helpers/zk.js';

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
