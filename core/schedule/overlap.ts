import { checkRange, ConfigError } from '../configError';
import type { Fire } from './fire';

export type OverlapPolicy =
	| { kind: 'skip-if-running' }
	| { kind: 'queue'; queueLimit: number }
	| { kind: 'allow-parallel'; maxParallel: number };

export const DEFAULT_OVERLAP_POLICY: OverlapPolicy = { kind: 'skip-if-running' };
export const MAX_QUEUE_LIMIT = 1000;
export const MAX_PARALLEL_RUNS = 100;

/** Throws a ConfigError naming the offending field (`overlap`, `queueLimit` or `maxParallel`). */
export function checkOverlapPolicy(policy: OverlapPolicy): void {
	switch (policy?.kind) {
		case 'skip-if-running':
			return;
		case 'queue':
			checkRange('queueLimit', policy.queueLimit, {
				min: 1,
				max: MAX_QUEUE_LIMIT,
				whole: true,
			});
			return;
		case 'allow-parallel':
			checkRange('maxParallel', policy.maxParallel, {
				min: 1,
				max: MAX_PARALLEL_RUNS,
				whole: true,
			});
			return;
		default:
			throw new ConfigError(
				'overlap',
				(policy as { kind?: unknown } | undefined)?.kind,
				'use skip-if-running, queue or allow-parallel',
			);
	}
}

/**
 * Decides what a fire does while runs this node started are still active, and hands out queued
 * fires as runs end.
 *
 * Deliberately in memory only, and built afresh on every activation: after a restart n8n no
 * longer reports when a run started before the restart ends, so a persisted running set would
 * block the schedule forever. (Persisted queued fires are a different matter: the engine stores
 * them and feeds them back in through `onBacklog`.)
 *
 * A fire answered with 'start' (here or from `onRunEnded`) counts as running from that moment, so
 * two decisions can never both take the last free slot; the caller must report its end with
 * `onRunEnded` (also when starting it failed).
 */
export class OverlapController {
	/** Run key → when its slot was taken. */
	private readonly running = new Map<string, number>();
	/** FIFO of waiting fires; backlog fires (catch-up, carried over) do not count against queueLimit. */
	private readonly waiting: Array<{ fire: Fire; backlog: boolean }> = [];

	constructor(readonly policy: OverlapPolicy) {
		checkOverlapPolicy(policy);
	}

	/** A scheduled fire: start it, queue it, or skip it (the caller records the reason from `skipReason`). */
	onFire(fire: Fire, now: number): 'start' | 'queue' | 'skip' {
		if (this.hasFreeSlot()) return this.take(fire, now);
		if (this.policy.kind !== 'queue') return 'skip';
		const queuedScheduled = this.waiting.filter((entry) => !entry.backlog).length;
		if (queuedScheduled >= this.policy.queueLimit) return 'skip';
		this.waiting.push({ fire, backlog: false });
		return 'queue';
	}

	/**
	 * A fire that was promised a run (catch-up, or queued before a restart): never skipped, but it
	 * still waits for a free slot, so run-all under skip-if-running runs the backlog one by one.
	 */
	onBacklog(fire: Fire, now: number): 'start' | 'queue' {
		if (this.hasFreeSlot()) return this.take(fire, now);
		this.waiting.push({ fire, backlog: true });
		return 'queue';
	}

	/** A run ended; returns the next waiting fire, now counted as running, for the caller to start. */
	onRunEnded(runKey: string, now: number): Fire | undefined {
		if (!this.running.delete(runKey)) return undefined;
		const next = this.waiting.shift();
		if (next) this.running.set(next.fire.runKey, now);
		return next?.fire;
	}

	/** A run started before this activation that may still be going (re-emitted from the outbox): it holds a slot. */
	adopt(runKey: string, now: number): void {
		this.running.set(runKey, now);
	}

	/** Runs holding a slot since before `cutoff`: their end was never reported. */
	heldSince(cutoff: number): string[] {
		return [...this.running].filter(([, since]) => since < cutoff).map(([runKey]) => runKey);
	}

	get runningKeys(): string[] {
		return [...this.running.keys()];
	}

	get queued(): Fire[] {
		return this.waiting.map((entry) => entry.fire);
	}

	skipReason(): string {
		switch (this.policy.kind) {
			case 'skip-if-running':
				return 'a previous run is still active (overlap: skip-if-running)';
			case 'queue':
				return `the queue is full (${this.policy.queueLimit} waiting; overlap: queue)`;
			case 'allow-parallel':
				return `${this.policy.maxParallel} runs are already active (overlap: allow-parallel)`;
		}
	}

	private hasFreeSlot(): boolean {
		const capacity = this.policy.kind === 'allow-parallel' ? this.policy.maxParallel : 1;
		return this.running.size < capacity;
	}

	private take(fire: Fire, now: number): 'start' {
		this.running.set(fire.runKey, now);
		return 'start';
	}
}
