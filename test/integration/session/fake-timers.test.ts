/**
 * A session whose process fakes the global timers (sinon's useFakeTimers,
 * node:test's mock timers; no one ticks them) keeps its own: the probe of an
 * idle session still notices a silent partition, and a request still times out.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RequestTimeoutError } from '@zkq/core';
import { sessionThroughProxy } from '../../helpers/partition.js';

/** `promise`, or a rejection after `ms` of real time. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  const ac = new AbortController();
  const late = sleep(ms, undefined, { signal: ac.signal }).then(() => {
    throw new Error(`no ${what} within ${ms} ms`);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    ac.abort();
    late.catch(() => undefined);
  }
}

test('faked global timers: the probe of an idle session notices a silent partition', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 3000, requestTimeout: 1000 });
  t.mock.timers.enable({ apis: ['Date', 'setTimeout', 'setInterval'] });
  t.after(() => t.mock.timers.reset());
  const suspended = once(s, 'suspended');
  proxy.freeze();
  await within(suspended, 15_000, "'suspended'");
  proxy.restore();
  await within(once(s, 'reconnected'), 30_000, "'reconnected'");
});

test('faked global timers: a request to a frozen server times out', async (t) => {
  const { proxy, session: s } = await sessionThroughProxy(t, { sessionTimeout: 30_000, requestTimeout: 1000 });
  t.mock.timers.enable({ apis: ['Date', 'setTimeout', 'setInterval'] });
  t.after(() => t.mock.timers.reset());
  proxy.freeze();
  const read = s.getData('/').then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok((await within(read, 30_000, 'request timeout')) instanceof RequestTimeoutError);
  proxy.restore();
});
