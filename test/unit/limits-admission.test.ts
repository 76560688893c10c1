/**
 * The admission of a limited claim (pure): what a worker may claim given the
 * settings, window, slots and claims read, and ZooKeeper's time.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type Admission,
  admit,
  effectiveLimits,
  type LimitState,
  MANUAL_WINDOW_COUNT,
  type WindowState,
} from '@zkq/core/internal';

const NOW = 1_000_000;

function state(over: Partial<LimitState> = {}): LimitState {
  return { settings: undefined, window: undefined, slots: [], active: 0, ...over };
}

function win(over: Partial<WindowState> = {}): WindowState {
  return { count: 0, ms: 1000, id: 'w1', manual: false, start: NOW - 100, version: 3, countVersion: 8, ...over };
}

function open(a: Admission): Admission & { kind: 'open' } {
  assert.equal(a.kind, 'open', JSON.stringify(a));
  return a as Admission & { kind: 'open' };
}

describe('effectiveLimits (BullMQ: the queue max wins, the worker duration wins)', () => {
  test('combinations', () => {
    assert.deepEqual(effectiveLimits(undefined), {});
    assert.deepEqual(effectiveLimits(undefined, { max: 2, duration: 100 }), { rate: { max: 2, duration: 100 } });
    assert.deepEqual(effectiveLimits({ max: '5', duration: '900' }, { max: 2, duration: 100 }), {
      rate: { max: 5, duration: 100 },
    });
    assert.deepEqual(effectiveLimits({ max: '5', duration: '900', concurrency: '3' }), {
      concurrency: 3,
      rate: { max: 5, duration: 900 },
    });
    assert.deepEqual(effectiveLimits({ max: '5' }), {}, 'a max without a duration limits nothing');
    assert.deepEqual(effectiveLimits({ concurrency: 'x', max: '0', duration: '-1' }), {}, 'unusable values');
  });
});

describe('admit: the rate limit', () => {
  const limiter = { max: 3, duration: 1000 };

  test('no window: opens one for up to max jobs', () => {
    const a = open(admit(state(), limiter, 5, NOW, false));
    assert.equal(a.capacity, 3);
    assert.equal(a.window?.kind, 'open');
    assert.equal(a.window?.count, 0);
    assert.equal(a.window?.ms, 1000);
    assert.match(a.window?.id ?? '', /^[0-9a-f]{8}$/);
  });

  test('a live window with room: counted into at its version, up to what is left', () => {
    const a = open(admit(state({ window: win({ count: 2 }) }), limiter, 5, NOW, false));
    assert.equal(a.capacity, 1);
    assert.deepEqual(a.window, { kind: 'count', version: 3, countVersion: 8, count: 2, ms: 1000, id: 'w1' });
  });

  test('a full window: limited for what is left of it', () => {
    assert.deepEqual(admit(state({ window: win({ count: 3 }) }), limiter, 1, NOW, false), { kind: 'rate', ttl: 900 });
  });

  test('a window that looks ended is confirmed on ZooKeeper’s time before it is replaced', () => {
    const ended = state({ window: win({ start: NOW - 1000 }) });
    assert.deepEqual(admit(ended, limiter, 1, NOW, false), { kind: 'confirm' });
    const a = open(admit(ended, limiter, 2, NOW, true));
    assert.equal(a.window?.kind, 'reopen');
    assert.equal(a.window?.version, 3);
    assert.equal(a.window?.countVersion, 8);
    assert.equal(a.window?.count, 0);
    assert.notEqual(a.window?.id, 'w1');
    assert.equal(a.capacity, 2);
  });

  test('a window ended on purpose (0 ms) is replaced without asking ZooKeeper’s time', () => {
    assert.equal(open(admit(state({ window: win({ ms: 0 }) }), limiter, 1, NOW, false)).window?.kind, 'reopen');
  });

  test('a manual window limits every worker, with or without a limiter, and is confirmed ended', () => {
    const manual = state({ window: win({ count: MANUAL_WINDOW_COUNT, ms: 500, manual: true }) });
    assert.deepEqual(admit(manual, undefined, 1, NOW, false), { kind: 'rate', ttl: 400 });
    assert.deepEqual(admit(manual, limiter, 1, NOW, false), { kind: 'rate', ttl: 400 });
    const ended = state({ window: win({ count: MANUAL_WINDOW_COUNT, ms: 50, manual: true }) });
    assert.deepEqual(admit(ended, undefined, 1, NOW, false), { kind: 'confirm' });
    assert.equal(open(admit(ended, undefined, 1, NOW, true)).window, undefined);
  });

  test('without a rate limit, a counting window is neither counted into, nor limiting, nor confirmed', () => {
    const a = open(admit(state({ window: win({ count: 2 }) }), undefined, 4, NOW, false));
    assert.equal(a.capacity, 4);
    assert.equal(a.window, undefined);
    assert.equal(admit(state({ window: win({ start: NOW - 5000 }) }), undefined, 1, NOW, false).kind, 'open');
  });

  test('the queue settings: max from the queue, the settings version to check', () => {
    const settings = { fields: { max: '1', duration: '2000' }, version: 7 };
    const a = open(admit(state({ settings }), limiter, 5, NOW, false));
    assert.equal(a.capacity, 1);
    assert.equal(a.window?.ms, 1000, 'the worker duration wins');
    assert.equal(a.settingsVersion, 7);
  });
});

describe('admit: the global concurrency', () => {
  const settings = (n: number) => ({ fields: { concurrency: String(n) }, version: 1 });

  test('free slots below N, never one held, at most N minus the claims listed', () => {
    const a = open(admit(state({ settings: settings(4), slots: ['s-0', 's-2'], active: 2 }), undefined, 5, NOW, false));
    assert.equal(a.capacity, 2);
    assert.deepEqual([...(a.slots ?? [])].sort(), ['s-1', 's-3']);
    const b = open(admit(state({ settings: settings(4), slots: ['s-0'], active: 3 }), undefined, 5, NOW, false));
    assert.equal(b.capacity, 1, 'two jobs started before the limit hold no slot and count');
  });

  test('maxed: every slot held, the claims fill N, or a slot of a larger earlier N is still held', () => {
    assert.deepEqual(
      admit(state({ settings: settings(2), slots: ['s-0', 's-1'], active: 2 }), undefined, 1, NOW, false),
      {
        kind: 'maxed',
        concurrency: 2,
      },
    );
    assert.equal(admit(state({ settings: settings(2), active: 2 }), undefined, 1, NOW, false).kind, 'maxed');
    assert.equal(
      admit(state({ settings: settings(2), slots: ['s-3'], active: 1 }), undefined, 1, NOW, false).kind,
      'maxed',
    );
  });

  test('with a rate limit too: the smaller room wins', () => {
    const s = { fields: { concurrency: '5', max: '2', duration: '1000' }, version: 1 };
    const a = open(admit(state({ settings: s }), undefined, 9, NOW, false));
    assert.equal(a.capacity, 2);
    assert.equal(a.slots?.length, 2);
    assert.equal(a.window?.kind, 'open');
  });

  test('a huge N picks a few free slots without listing them all', () => {
    const a = open(admit(state({ settings: settings(1_000_000_000) }), undefined, 3, NOW, false));
    assert.equal(a.slots?.length, 3);
  });
});
