/**
 * BullMQ's `telemetry` option on zkq's Queue and Worker, with bullmq-otel
 * and OpenTelemetry's in-memory exporter: the spans of add, process and
 * complete/fail form one trace, whose context travels inside the job.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Telemetry } from '@zkq/core';
import type { Attributes } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import type { Telemetry as BullTelemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
// bullmq-otel is typed against BullMQ's Telemetry; zkq takes it as it is
const bullTelemetry: BullTelemetry = new BullMQOtel({ tracerName: 'zkq-test' });
const telemetry: Telemetry = bullTelemetry;
const appTracer = trace.getTracer('app');

const PRODUCER = 3;
const CONSUMER = 4;
const INTERNAL = 0;

/** The spans of one queue (tests run side by side; each uses its own queue name). */
function spansOf(queue: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.attributes['bullmq.queue.name'] === queue);
}

function one(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one '${name}' span among ${spans.map((s) => s.name).join(', ')}`);
  return found[0] as ReadableSpan;
}

test('add, process and complete form one trace, continued from the producer inside the job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('tr-ok', { ...env, telemetry });
  t.after(() => queue.close());
  const job = await appTracer.startActiveSpan('request', async (request) => {
    try {
      return await queue.add('email', { to: 'ada' });
    } finally {
      request.end();
    }
  });
  // BullMQ's place and shape for the context: opts.telemetry.metadata, the serialized context
  const metadata = JSON.parse(String(job.opts.telemetry?.metadata)) as { traceparent?: string };
  assert.match(String(metadata.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  assert.equal((await queue.getJob(job.id))?.opts.telemetry?.metadata, job.opts.telemetry?.metadata);

  let inner: { traceId: string; spanId: string } | undefined;
  const worker = new Worker(
    'tr-ok',
    async () => {
      // the processor runs inside the process span: its own spans are children of it
      const span = appTracer.startSpan('send');
      inner = { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
      span.end();
      return 'sent';
    },
    { ...env, telemetry },
  );
  t.after(() => worker.close());
  await waitFor(() => spansOf('tr-ok').some((s) => s.name === 'process tr-ok'), { what: 'the process span' });

  const spans = spansOf('tr-ok');
  const add = one(spans, 'add tr-ok.email');
  const process = one(spans, 'process tr-ok');
  const complete = one(spans, 'complete tr-ok');
  const request = exporter.getFinishedSpans().find((s) => s.name === 'request') as ReadableSpan;
  const traceId = request.spanContext().traceId;
  assert.equal(add.kind, PRODUCER);
  assert.equal(process.kind, CONSUMER);
  assert.equal(complete.kind, INTERNAL);
  for (const s of [add, process, complete]) assert.equal(s.spanContext().traceId, traceId, `${s.name} in the trace`);
  assert.equal(add.parentSpanContext?.spanId, request.spanContext().spanId);
  assert.equal(process.parentSpanContext?.spanId, add.spanContext().spanId, 'process continues the add span');
  assert.equal(complete.parentSpanContext?.spanId, process.spanContext().spanId);
  const send = exporter.getFinishedSpans().find((s) => s.name === 'send') as ReadableSpan;
  assert.equal(send.spanContext().traceId, inner?.traceId);
  assert.equal(send.parentSpanContext?.spanId, process.spanContext().spanId, 'processor spans are children');

  assert.equal(add.attributes['bullmq.job.id'], job.id);
  assert.equal(add.attributes['bullmq.job.name'], 'email');
  assert.equal(add.attributes['bullmq.queue.operation'], 'add');
  assert.equal(process.attributes['bullmq.job.id'], job.id);
  assert.equal(process.attributes['bullmq.worker.id'], worker.id);
  assert.equal(process.attributes['bullmq.job.attempts.made'], 1);
  assert.equal(typeof process.attributes['bullmq.job.processed.timestamp'], 'number');
  const done = process.events.find((e) => e.name === 'job completed');
  assert.equal(done?.attributes?.['bullmq.job.result'], '"sent"');
  assert.equal(complete.attributes['bullmq.job.id'], job.id);
});

test('a failing job: retry, then fail, each attempt a process span of the same trace', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('tr-fail', { ...env, telemetry });
  t.after(() => queue.close());
  const job = await queue.add('flaky', {}, { attempts: 2 });
  const worker = new Worker(
    'tr-fail',
    async () => {
      throw new Error('boom');
    },
    { ...env, telemetry },
  );
  t.after(() => worker.close());
  await waitFor(() => spansOf('tr-fail').some((s) => s.name === 'fail tr-fail'), { what: 'the fail span' });
  const spans = spansOf('tr-fail');
  const add = one(spans, 'add tr-fail.flaky');
  const processes = spans.filter((s) => s.name === 'process tr-fail');
  assert.equal(processes.length, 2);
  const retry = one(spans, 'retry tr-fail');
  const fail = one(spans, 'fail tr-fail');
  const traceId = add.spanContext().traceId;
  for (const s of [...processes, retry, fail]) assert.equal(s.spanContext().traceId, traceId);
  for (const p of processes) {
    assert.equal(p.parentSpanContext?.spanId, add.spanContext().spanId);
    const failed = p.events.find((e) => e.name === 'job failed');
    assert.equal(failed?.attributes?.['bullmq.job.failed.reason'], 'boom');
  }
  assert.deepEqual(processes.map((p) => p.attributes['bullmq.job.attempts.made']).sort(), [1, 2]);
  assert.equal(fail.attributes['bullmq.job.id'], job.id);
});

test('addBulk: one span, every job carries its context; omitContext keeps a job out of the trace', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('tr-bulk', { ...env, telemetry });
  t.after(() => queue.close());
  const jobs = await queue.addBulk([
    { name: 'a', data: {} },
    { name: 'b', data: {}, opts: { telemetry: { omitContext: true } } },
    { name: 'c', data: {}, opts: { telemetry: { metadata: 'given' } } },
  ]);
  const bulk = one(spansOf('tr-bulk'), 'addBulk tr-bulk');
  assert.equal(bulk.kind, PRODUCER);
  assert.equal(bulk.attributes['bullmq.job.bulk.count'], 3);
  const [a, b, c] = jobs;
  assert.match(String(a?.opts.telemetry?.metadata), new RegExp(bulk.spanContext().traceId));
  assert.equal(b?.opts.telemetry?.metadata, undefined);
  assert.equal(c?.opts.telemetry?.metadata, 'given', 'a context given by the caller is kept');
  const single = await queue.add('d', {}, { telemetry: { omitContext: true } });
  assert.equal(single.opts.telemetry?.metadata, undefined);

  const worker = new Worker('tr-bulk', async () => null, { ...env, telemetry });
  t.after(() => worker.close());
  await waitFor(() => spansOf('tr-bulk').filter((s) => s.name === 'process tr-bulk').length === 4);
  const processOf = (id: string) =>
    spansOf('tr-bulk').find(
      (s) => s.name === 'process tr-bulk' && s.attributes['bullmq.job.id'] === id,
    ) as ReadableSpan;
  assert.equal(processOf(a?.id as string).spanContext().traceId, bulk.spanContext().traceId);
  assert.notEqual(processOf(b?.id as string).spanContext().traceId, bulk.spanContext().traceId);
  // metadata that is not a context starts a new trace instead of failing the job
  assert.equal(await queue.getJobState(c?.id as string), 'completed');
});

test("a meter records BullMQ's job counters and durations; queue operations get spans", async (t) => {
  const env = await queueEnv(t);
  const recorded: { name: string; value: number; attributes?: Attributes }[] = [];
  const meter = {
    createCounter: (name: string) => ({
      add: (value: number, attributes?: Attributes) =>
        recorded.push({ name, value, ...(attributes ? { attributes } : {}) }),
    }),
    createHistogram: (name: string) => ({
      record: (value: number, attributes?: Attributes) =>
        recorded.push({ name, value, ...(attributes ? { attributes } : {}) }),
    }),
    createGauge: (name: string) => ({ record: (value: number) => recorded.push({ name, value }) }),
  };
  const withMeter: Telemetry = { ...telemetry, meter };
  const queue = new Queue('tr-meter', { ...env, telemetry: withMeter });
  t.after(() => queue.close());
  await queue.addBulk([
    { name: 'ok', data: {} },
    { name: 'bad', data: {} },
  ]);
  const worker = new Worker(
    'tr-meter',
    async (job) => {
      if (job.name === 'bad') throw new Error('no');
    },
    { ...env, telemetry: withMeter },
  );
  t.after(() => worker.close());
  await waitFor(() => recorded.filter((r) => r.name === 'bullmq.job.duration').length === 2);
  const completed = recorded.find((r) => r.name === 'bullmq.jobs.completed');
  assert.equal(completed?.value, 1);
  assert.equal(completed?.attributes?.['bullmq.job.name'], 'ok');
  assert.equal(completed?.attributes?.['bullmq.queue.name'], 'tr-meter');
  assert.equal(recorded.find((r) => r.name === 'bullmq.jobs.failed')?.attributes?.['bullmq.job.state'], 'failed');
  assert.ok(recorded.every((r) => r.name !== 'bullmq.job.duration' || r.value >= 0));

  await queue.pause();
  await queue.resume();
  await queue.clean(0, 10, 'completed');
  const ops = spansOf('tr-meter')
    .filter((s) => s.kind === INTERNAL)
    .map((s) => s.name);
  for (const name of ['pause tr-meter', 'resume tr-meter', 'clean tr-meter']) assert.ok(ops.includes(name), name);
});

test('a telemetry option that is not one is refused at once', async (t) => {
  const env = await queueEnv(t);
  const bad = { tracer: {} } as unknown as Telemetry;
  assert.throws(() => new Queue('tr-bad', { ...env, telemetry: bad }), { code: 'ZKQ_INVALID_ARGUMENT' });
  assert.throws(() => new Worker('tr-bad', async () => null, { ...env, telemetry: bad }), {
    code: 'ZKQ_INVALID_ARGUMENT',
  });
});
