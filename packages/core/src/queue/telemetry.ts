/**
 * Tracing through BullMQ's `telemetry` option: the same interfaces (so an
 * implementation written for BullMQ, such as bullmq-otel, plugs in
 * unchanged), the same span names and attributes, and the same place for the
 * trace context inside a job: `opts.telemetry.metadata`, the producer's
 * serialized context, from which the worker's `process` span continues the
 * trace.
 *
 * Without the option nothing here runs: `trace` calls its callback directly.
 */
import { InvalidArgumentError } from '../errors.js';

/** BullMQ's SpanKind (OpenTelemetry's values). */
export const SpanKind = {
  INTERNAL: 0,
  SERVER: 1,
  CLIENT: 2,
  PRODUCER: 3,
  CONSUMER: 4,
} as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/** BullMQ's Telemetry: a tracer, a context manager, and optionally a meter. */
export interface Telemetry<Context = any> {
  tracer: Tracer<Context>;
  contextManager: ContextManager<Context>;
  meter?: Meter;
}

export interface Tracer<Context = any> {
  /** Starts a span on `context`, or on the active context when none is given. */
  startSpan(name: string, options?: SpanOptions, context?: Context): Span<Context>;
}

export interface SpanOptions {
  kind: number;
}

export interface ContextManager<Context = any> {
  with<A extends (...args: any[]) => any>(context: Context, fn: A): ReturnType<A>;
  active(): Context;
  /** An empty context (optional, as in BullMQ). */
  root?(): Context;
  /** The context serialized, to travel inside a job. */
  getMetadata(context: Context): string;
  /** A context continued from serialized metadata. */
  fromMetadata(activeContext: Context, metadata: string): Context;
}

export interface Span<Context = any> {
  setSpanOnContext(ctx: Context): Context;
  setAttribute(key: string, value: AttributeValue): void;
  setAttributes(attributes: Attributes): void;
  addEvent(name: string, attributes?: Attributes): void;
  recordException(exception: Exception, time?: Time): void;
  end(): void;
}

export interface Meter {
  createCounter(name: string, options?: MetricOptions): Counter;
  createHistogram(name: string, options?: MetricOptions): Histogram;
  createGauge(name: string, options?: MetricOptions): Gauge;
}

export interface MetricOptions {
  description?: string;
  unit?: string;
}

export interface Counter {
  add(value: number, attributes?: Attributes): void;
}

export interface Histogram {
  record(value: number, attributes?: Attributes): void;
}

export interface Gauge {
  record(value: number, attributes?: Attributes): void;
}

export interface Attributes {
  [attribute: string]: AttributeValue | undefined;
}

export type AttributeValue =
  | string
  | number
  | boolean
  | Array<null | undefined | string>
  | Array<null | undefined | number>
  | Array<null | undefined | boolean>;

export type Exception = string | { code?: string | number; name?: string; message?: string; stack?: string };

export type Time = [number, number] | number | Date;

/** BullMQ's attribute names (the ones zkq sets). */
export const TelemetryAttributes = {
  QueueName: 'bullmq.queue.name',
  QueueOperation: 'bullmq.queue.operation',
  BulkCount: 'bullmq.job.bulk.count',
  BulkNames: 'bullmq.job.bulk.names',
  JobName: 'bullmq.job.name',
  JobId: 'bullmq.job.id',
  JobAttemptsMade: 'bullmq.job.attempts.made',
  JobType: 'bullmq.job.type',
  QueueGrace: 'bullmq.queue.grace',
  QueueCleanLimit: 'bullmq.queue.clean.limit',
  WorkerId: 'bullmq.worker.id',
  WorkerName: 'bullmq.worker.name',
  JobAttemptFinishedTimestamp: 'bullmq.job.attempt_finished_timestamp',
  JobProcessedTimestamp: 'bullmq.job.processed.timestamp',
  JobResult: 'bullmq.job.result',
  JobFailedReason: 'bullmq.job.failed.reason',
  JobState: 'bullmq.job.state',
  DeduplicationKey: 'bullmq.job.deduplication.key',
} as const;

/** BullMQ's metric names, recorded through `telemetry.meter`. */
export const MetricNames = {
  JobsCompleted: 'bullmq.jobs.completed',
  JobsFailed: 'bullmq.jobs.failed',
  JobsDelayed: 'bullmq.jobs.delayed',
  JobsRetried: 'bullmq.jobs.retried',
  JobDuration: 'bullmq.job.duration',
} as const;

/** Throws InvalidArgumentError unless `t` looks like a Telemetry (a tracer and a context manager). */
export function validateTelemetry(t: unknown, name = 'telemetry'): asserts t is Telemetry {
  const o = t as Partial<Telemetry> | null;
  const cm = o?.contextManager as Partial<ContextManager> | undefined;
  const ok =
    typeof o === 'object' &&
    o !== null &&
    typeof o.tracer?.startSpan === 'function' &&
    ['with', 'active', 'getMetadata', 'fromMetadata'].every(
      (m) => typeof cm?.[m as keyof ContextManager] === 'function',
    );
  if (!ok) {
    throw new InvalidArgumentError(
      `${name} must be a Telemetry: { tracer: { startSpan }, contextManager: { with, active, getMetadata, fromMetadata } }`,
      name,
    );
  }
}

/**
 * Runs `fn` in a span named `<operation> <destination>` (BullMQ's `trace`).
 * With `srcMetadata` the span continues that context (a worker's `process`
 * continues the producer's). `fn` gets the span and, when `propagate`, the
 * span's context serialized (what a producer stores in the job). A throw is
 * recorded on the span; the span always ends.
 */
export async function trace<T>(
  telemetry: Telemetry | undefined,
  kind: SpanKind,
  queueName: string,
  operation: string,
  destination: string,
  fn: (span?: Span, metadata?: string) => Promise<T> | T,
  o: { srcMetadata?: string | undefined; propagate?: boolean } = {},
): Promise<T> {
  if (!telemetry) return fn();
  const { tracer, contextManager } = telemetry;
  const active = contextManager.active();
  const parent = o.srcMetadata ? fromMetadata(contextManager, active, o.srcMetadata) : undefined;
  const span = tracer.startSpan(destination ? `${operation} ${destination}` : operation, { kind }, parent);
  try {
    span.setAttributes({ [TelemetryAttributes.QueueName]: queueName, [TelemetryAttributes.QueueOperation]: operation });
    const ctx = span.setSpanOnContext(kind === SpanKind.CONSUMER && parent !== undefined ? parent : active);
    const metadata = o.propagate ? contextManager.getMetadata(ctx) : undefined;
    return await contextManager.with(ctx, () => fn(span, metadata));
  } catch (err) {
    span.recordException(err as Exception);
    throw err;
  } finally {
    span.end();
  }
}

/** A context from stored metadata; metadata that does not parse starts a new trace instead of failing the job. */
function fromMetadata<C>(manager: ContextManager<C>, active: C, metadata: string): C | undefined {
  try {
    return manager.fromMetadata(active, metadata);
  } catch {
    return undefined;
  }
}
