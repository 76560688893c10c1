/**
 * A session's heartbeat alone, over a fake link (no server): what it does at
 * each check, by ZooKeeper's rule (a probe after a third of the session
 * timeout without a request, the connection dropped when nothing sent in the
 * last two thirds was answered). Waits only ever run past a bound, so a slow
 * machine only makes them longer.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Heartbeat, type HeartbeatLink } from '../../packages/core/src/zk/heartbeat.ts';

function fakeLink(sessionTimeout: number, beating = true) {
  const seen = { drops: 0, probes: 0 };
  let answer: (() => void) | undefined;
  const link: HeartbeatLink = {
    beating: () => beating,
    sessionTimeout: () => sessionTimeout,
    drop: () => {
      seen.drops++;
    },
    probe: () => {
      seen.probes++;
      return new Promise<void>((resolve) => {
        answer = resolve;
      });
    },
  };
  return { link, seen, answer: () => answer?.() };
}

describe('the heartbeat', () => {
  test('does nothing while the link is down or the session closed', () => {
    const { link, seen } = fakeLink(30_000, false);
    const heartbeat = new Heartbeat(link);
    heartbeat.start();
    heartbeat.stop();
    assert.deepEqual(seen, { drops: 0, probes: 0 });
  });

  test('a quiet session sends one probe at a time; a busy one none', async () => {
    const { link, seen } = fakeLink(60_000);
    const heartbeat = new Heartbeat(link);
    heartbeat.sent();
    heartbeat.start();
    assert.equal(seen.probes, 0, 'a request went out just now');
    heartbeat.stop();

    const quiet = fakeLink(30);
    const idle = new Heartbeat(quiet.link);
    await sleep(15); // past a third of the session timeout
    idle.heard(performance.now() + 60_000); // answered, and alive whatever pauses the machine takes
    idle.start();
    idle.start();
    idle.stop();
    assert.equal(quiet.seen.probes, 1, 'one probe in flight, not two');
    assert.equal(quiet.seen.drops, 0);
    quiet.answer();
  });

  test('drops the connection when nothing sent in the last two thirds of the session timeout was answered', async () => {
    const { link, seen } = fakeLink(30);
    const heartbeat = new Heartbeat(link);
    assert.equal(heartbeat.isAlive(60_000), true);
    await sleep(25); // past two thirds of the session timeout
    assert.equal(heartbeat.isAlive(30), false);
    heartbeat.start();
    heartbeat.stop();
    assert.equal(seen.drops, 1);
    assert.equal(seen.probes, 0, 'dropped, not probed');
  });
});
