/**
 * The executor's one retry policy (`runPlanned`), over a fake session: a
 * plan is run again after a conflict, its answer comes back once its write
 * is applied, a caller reads failures its own way, and the conflicts stop
 * at PLAN_ATTEMPTS with TooManyConflictsError.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BadVersionError, ConnectionLossError, NoAuthError, NodeExistsError, NoNodeError } from '@zkq/core';
import {
  FencedError,
  OutcomeUnknownError,
  PLAN_ATTEMPTS,
  type ProtocolOp,
  QueueLayout,
  TooManyConflictsError,
  type TxUnit,
  UNKNOWN_REPLANS,
} from '@zkq/core/internal';
import { atOp, fakeExecutor, receiptOf } from '../helpers/fake-session.ts';

const layout = new QueueLayout('q');

/** A unit writing job `id`'s record at `version`. */
function writeAt(id: string, version: number): TxUnit {
  const op: ProtocolOp = { op: 'setData', path: layout.job(id), data: Buffer.from(id), version };
  return { build: () => ({ ops: [op] }) };
}

describe('runPlanned', () => {
  test('a plan that answers without a unit writes nothing', async () => {
    const { session, executor } = fakeExecutor(layout);
    assert.equal(await executor.runPlanned(async () => ({ answer: 'none' })), 'none');
    assert.equal(session.sent.length, 0);
  });

  test('a conflict plans again from a fresh read; the answer is the plan whose write was applied', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (ops, n) => {
      if (n < 2) throw atOp(new BadVersionError(layout.job('a')), 0);
      return session.applied(ops);
    };
    const seen: number[] = [];
    const answer = await executor.runPlanned(async (attempt) => {
      seen.push(attempt);
      return { answer: `plan ${attempt}`, unit: writeAt('a', attempt) };
    });
    assert.equal(answer, 'plan 3');
    assert.deepEqual(seen, [1, 2, 3]);
    assert.deepEqual(
      session.sent.map((m) => (m[0] as { version?: number }).version),
      [1, 2, 3],
    );
  });

  test('a failure that names no op is thrown as it is, not planned again', async () => {
    const { executor } = fakeExecutor(layout);
    let plans = 0;
    const failing: TxUnit = {
      build: () => {
        throw new NoNodeError(layout.job('a'));
      },
    };
    await assert.rejects(
      executor.runPlanned(async () => {
        plans++;
        return { answer: 1, unit: failing };
      }),
      NoNodeError,
    );
    assert.equal(plans, 1);
  });

  test('an op refused for no conflict (no permission) is thrown as it is, not planned again', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = () => {
      throw atOp(new NoAuthError(layout.job('a')), 0);
    };
    let plans = 0;
    await assert.rejects(
      executor.runPlanned(async () => {
        plans++;
        return { answer: 1, unit: writeAt('a', 1) };
      }),
      NoAuthError,
    );
    assert.equal(plans, 1);
  });

  test('an error of the plan is thrown before anything is written', async () => {
    const { session, executor } = fakeExecutor(layout);
    await assert.rejects(
      executor.runPlanned(async () => {
        throw new RangeError('no such job');
      }),
      RangeError,
    );
    assert.equal(session.sent.length, 0);
  });

  test('conflicts every time: TooManyConflictsError after PLAN_ATTEMPTS plans, the last conflict its cause', async () => {
    const { session, executor } = fakeExecutor(layout);
    const conflicts: BadVersionError[] = [];
    session.respond = () => {
      const err = atOp(new BadVersionError(layout.job('a')), 0);
      conflicts.push(err);
      throw err;
    };
    let plans = 0;
    const err = await executor
      .runPlanned(async () => {
        plans++;
        return { answer: true, unit: writeAt('a', 0) };
      })
      .then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof TooManyConflictsError);
    assert.equal(err.code, 'ZKQ_TOO_MANY_CONFLICTS');
    assert.equal(err.attempts, PLAN_ATTEMPTS);
    assert.equal(err.cause, conflicts[conflicts.length - 1]);
    assert.equal(plans, PLAN_ATTEMPTS);
    assert.equal(session.sent.length, PLAN_ATTEMPTS);
  });

  test('onFailure: an answer ends the run, `fail` throws the conflict, `again` plans again', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (ops, n) => {
      if (n === 0) throw atOp(new BadVersionError(layout.job('a')), 0);
      throw atOp(new NodeExistsError(ops[0]?.path ?? ''), 0);
    };
    const verdicts: string[] = [];
    const answer = await executor.runPlanned(async () => ({ answer: 'written', unit: writeAt('a', 0) }), {
      onFailure: (error) => {
        verdicts.push((error as Error).name);
        return error instanceof NodeExistsError ? { answer: 'there already' } : 'again';
      },
    });
    assert.equal(answer, 'there already');
    assert.deepEqual(verdicts, ['BadVersionError', 'NodeExistsError']);

    const conflict = atOp(new BadVersionError(layout.job('b')), 0);
    session.respond = () => {
      throw conflict;
    };
    await assert.rejects(
      executor.runPlanned(async () => ({ answer: 1, unit: writeAt('b', 0) }), { onFailure: () => 'fail' }),
      (e: unknown) => e === conflict,
    );
  });

  test('onFailure returning undefined leaves the default: a conflict plans again', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (ops, n) => {
      if (n === 0) throw atOp(new BadVersionError(layout.job('a')), 0);
      return session.applied(ops);
    };
    let plans = 0;
    const answer = await executor.runPlanned(
      async () => {
        plans++;
        return { answer: plans, unit: writeAt('a', 0) };
      },
      { onFailure: () => undefined },
    );
    assert.equal(answer, 2);
  });

  test('receipt and fence are those of run: no receipt when told, a failed fence ends with FencedError', async () => {
    const { session, executor } = fakeExecutor(layout);
    await executor.runPlanned(async () => ({ answer: 0, unit: writeAt('a', 0) }), { receipt: false });
    assert.equal(receiptOf(layout, session.sent[0] ?? []), undefined);
    await executor.runPlanned(async () => ({ answer: 0, unit: writeAt('a', 0) }));
    assert.ok(receiptOf(layout, session.sent[1] ?? []));

    const fence = (): ProtocolOp[] => [{ op: 'check', path: `${layout.root}/leader`, version: 3, role: 'fence' }];
    session.respond = () => {
      throw atOp(new BadVersionError(`${layout.root}/leader`), 0);
    };
    let plans = 0;
    await assert.rejects(
      executor.runPlanned(
        async () => {
          plans++;
          return { answer: 0, unit: writeAt('a', 0) };
        },
        { fence },
      ),
      FencedError,
    );
    assert.equal(plans, 1);
  });
});

describe('runPlannedBatch', () => {
  test('the units go together; only the item whose write conflicted is planned again; answers in order', async () => {
    const { session, executor } = fakeExecutor(layout);
    let failed = false;
    session.respond = (ops) => {
      const b = ops.findIndex((o) => o.path === layout.job('b'));
      if (!failed && b >= 0) {
        failed = true;
        throw atOp(new BadVersionError(layout.job('b')), b);
      }
      return session.applied(ops);
    };
    const planned: string[][] = [];
    const answers = await executor.runPlannedBatch(['a', 'b', 'c', 'none'], async (items, attempt) => {
      planned.push([...items]);
      return items.map((id) =>
        id === 'none' ? { answer: 'no write' } : { answer: `${id}@${attempt}`, unit: writeAt(id, attempt) },
      );
    });
    assert.deepEqual(answers, ['a@1', 'b@2', 'c@1', 'no write']);
    assert.deepEqual(planned, [['a', 'b', 'c', 'none'], ['b']]);
    // the first multi carried the three writes together
    const jobs = ['a', 'b', 'c'].map((id) => layout.job(id));
    assert.deepEqual(
      (session.sent[0] ?? []).filter((o) => jobs.includes(o.path)).map((o) => o.path),
      jobs,
    );
  });

  test('answerOf reads the answer from the applied write', async () => {
    const { executor } = fakeExecutor(layout);
    const [answer] = await executor.runPlannedBatch(['a'], async () => [
      { answer: 'before', unit: writeAt('a', 0), answerOf: (r) => `applied with ${r.results?.length ?? 0} results` },
    ]);
    assert.match(String(answer), /^applied with \d+ results$/);
  });

  test('an item that conflicts every time ends the batch with TooManyConflictsError after PLAN_ATTEMPTS plans', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (ops) => {
      const b = ops.findIndex((o) => o.path === layout.job('b'));
      if (b >= 0) throw atOp(new BadVersionError(layout.job('b')), b);
      return session.applied(ops);
    };
    let plans = 0;
    const err = await executor
      .runPlannedBatch(['a', 'b'], async (items) => {
        plans++;
        return items.map((id) => ({ answer: id, unit: writeAt(id, 0) }));
      })
      .then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof TooManyConflictsError);
    assert.equal(plans, PLAN_ATTEMPTS);
  });

  test('a failure that is no conflict is thrown at once', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = () => {
      throw atOp(new NoAuthError(layout.job('a')), 0);
    };
    let plans = 0;
    await assert.rejects(
      executor.runPlannedBatch(['a'], async (items) => {
        plans++;
        return items.map((id) => ({ answer: id, unit: writeAt(id, 0) }));
      }),
      NoAuthError,
    );
    assert.equal(plans, 1);
  });
});

describe('an outcome left unknown', () => {
  test('is planned again from a fresh read, never sent again as it was (the node may be made again meanwhile)', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (ops, n) => {
      if (n === 0) throw new ConnectionLossError(layout.job('a'));
      return session.applied(ops);
    };
    const seen: number[] = [];
    const answer = await executor.runPlanned(
      async (attempt) => {
        seen.push(attempt);
        return { answer: `plan ${attempt}`, unit: writeAt('a', attempt) };
      },
      { receipt: false },
    );
    assert.equal(answer, 'plan 2');
    assert.deepEqual(seen, [1, 2]);
    assert.deepEqual(
      session.sent.map((m) => (m[0] as { version?: number }).version),
      [1, 2],
      'the second write is the second plan',
    );
  });

  test('a receipt found settles it without a new plan; one not found plans again', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (ops, n) => {
      if (n === 0) {
        const receipt = receiptOf(layout, ops);
        if (receipt) session.present.add(receipt);
        throw new ConnectionLossError(layout.job('a'));
      }
      if (n === 1) throw new ConnectionLossError(layout.job('b'));
      return session.applied(ops);
    };
    let plans = 0;
    const plan = async () => ({ answer: ++plans, unit: writeAt('a', 0) });
    assert.equal(await executor.runPlanned(plan), 1, 'applied, its reply lost');
    assert.equal(await executor.runPlanned(plan), 3, 'not applied: planned again');
  });

  test(`after ${UNKNOWN_REPLANS} rounds planned again, OutcomeUnknownError`, async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = () => {
      throw new ConnectionLossError(layout.job('a'));
    };
    let plans = 0;
    await assert.rejects(
      executor.runPlannedBatch(
        ['a', 'b'],
        async (items) => {
          plans++;
          return items.map((id) => ({ answer: id, unit: writeAt(id, 0) }));
        },
        { receipt: false },
      ),
      OutcomeUnknownError,
    );
    assert.equal(plans, UNKNOWN_REPLANS + 1);
  });
});
