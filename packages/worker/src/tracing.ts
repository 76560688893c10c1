/**
 * WorkerTracing: the Worker's `telemetry` option, shaped like BullMQ's.
 *
 * Each attempt runs in a CONSUMER span `process <queue>` that continues the
 * trace whose context the producer stored in the job
 * (`opts.telemetry.metadata`); the processor runs with that span active, so
 * its own spans are its children. Writing the outcome is an INTERNAL child
 * span `complete`, `fail`, `retry` or `delay`; the process span then gets
 * BullMQ's `job completed` / `job failed` event. With a `meter`, BullMQ's
 * job counters and duration histogram are recorded too.
 *
 * A retried attempt continues the producer's trace too (BullMQ links it to
 * the failed attempt's span instead).
 */
import { type Job, SpanKind, type Telemetry } from '@zkq/core';
import {
  type ClaimedJob,
  type Finish,
  type FinishResult,
  MetricNames,
  type Outcome,
  type Span,
  TelemetryAttributes,
  trace,
} from '@zkq/core/internal';

/** The span operation of an outcome (BullMQ's names). */
export function finishOperation(outcome: Outcome): 'complete' | 'fail' | 'retry' | 'delay' {
  if (outcome.kind === 'completed') return 'complete';
  if (outcome.kind === 'failed') return 'fail';
  if (outcome.kind === 'waiting-children') return 'delay';
  return outcome.due > 0 ? 'delay' : 'retry';
}

export class WorkerTracing {
  constructor(
    private readonly telemetry: Telemetry | undefined,
    private readonly queue: string,
    private readonly worker: { id: string; name?: string | undefined },
  ) {}

  /** Runs one attempt in its `process` span. */
  process(job: Job, run: (span?: Span) => Promise<void>): Promise<void> {
    if (!this.telemetry) return run();
    return trace(
      this.telemetry,
      SpanKind.CONSUMER,
      this.queue,
      'process',
      this.queue,
      async (span) => {
        span?.setAttributes({
          [TelemetryAttributes.WorkerId]: this.worker.id,
          [TelemetryAttributes.WorkerName]: this.worker.name,
          [TelemetryAttributes.JobId]: job.id,
          [TelemetryAttributes.JobName]: job.name,
        });
        try {
          await run(span);
        } finally {
          span?.setAttributes({
            [TelemetryAttributes.JobAttemptFinishedTimestamp]: job.finishedOn ?? Date.now(),
            [TelemetryAttributes.JobProcessedTimestamp]: job.processedOn,
          });
        }
      },
      { srcMetadata: job.opts?.telemetry?.metadata },
    );
  }

  /** Writes an outcome in its own span; then marks the process span and records the meter's figures. */
  finish(f: Finish, span: Span | undefined, write: () => Promise<FinishResult>): Promise<FinishResult> {
    // untraced: the write itself, with no async frame of its own (one per job)
    return this.telemetry ? this.tracedFinish(this.telemetry, f, span, write) : write();
  }

  private async tracedFinish(
    telemetry: Telemetry,
    f: Finish,
    span: Span | undefined,
    write: () => Promise<FinishResult>,
  ): Promise<FinishResult> {
    const record = f.job.record;
    const result = await trace(
      telemetry,
      SpanKind.INTERNAL,
      this.queue,
      finishOperation(f.outcome),
      this.queue,
      async (s) => {
        s?.setAttributes({ [TelemetryAttributes.JobName]: record.name, [TelemetryAttributes.JobId]: record.id });
        const r = await write();
        if (!r.ok) s?.recordException(r.error as Error);
        return r;
      },
    );
    if (result.ok) {
      this.markProcessSpan(span, f.outcome, record.attemptsMade + 1);
      this.meter(f.job, f.outcome);
    }
    return result;
  }

  private markProcessSpan(span: Span | undefined, outcome: Outcome, attemptsMade: number): void {
    if (!span) return;
    if (outcome.kind === 'completed') {
      span.addEvent('job completed', { [TelemetryAttributes.JobResult]: JSON.stringify(outcome.returnvalue) });
    } else if (outcome.kind !== 'waiting-children') {
      span.addEvent('job failed', { [TelemetryAttributes.JobFailedReason]: outcome.reason });
    }
    span.setAttributes({ [TelemetryAttributes.JobAttemptsMade]: attemptsMade });
  }

  /** BullMQ's recordJobMetrics: a counter per outcome and the duration since the job started. */
  private meter(job: ClaimedJob, outcome: Outcome): void {
    const meter = this.telemetry?.meter;
    if (!meter) return;
    const op = finishOperation(outcome);
    const state = op === 'complete' ? 'completed' : op === 'fail' ? 'failed' : op === 'delay' ? 'delayed' : 'retried';
    const name = {
      completed: MetricNames.JobsCompleted,
      failed: MetricNames.JobsFailed,
      delayed: MetricNames.JobsDelayed,
      retried: MetricNames.JobsRetried,
    }[state];
    const attributes = {
      [TelemetryAttributes.QueueName]: this.queue,
      [TelemetryAttributes.JobName]: job.record.name,
      [TelemetryAttributes.JobState]: state,
    };
    meter.createCounter(name, { description: `Number of jobs ${state}`, unit: '1' }).add(1, attributes);
    const started = job.record.processedOn;
    if (started) {
      meter
        .createHistogram(MetricNames.JobDuration, { description: 'Job processing duration', unit: 'ms' })
        .record(Date.now() - started, attributes);
    }
  }
}
