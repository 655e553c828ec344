import type { Fire } from './fire';
import { OverlapController } from './overlap';

const fire = (n: number): Fire => ({ runKey: `r${n}`, declaredAt: n, kind: 'scheduled' });

describe('OverlapController', () => {
	it('skip-if-running: one run at a time, fires meanwhile are skipped', () => {
		const overlap = new OverlapController({ kind: 'skip-if-running' });
		expect(overlap.onFire(fire(1), 0)).toBe('start');
		expect(overlap.onFire(fire(2), 0)).toBe('skip');
		expect(overlap.skipReason()).toContain('skip-if-running');
		expect(overlap.onRunEnded('r1', 0)).toBeUndefined();
		expect(overlap.onFire(fire(3), 0)).toBe('start');
		expect(overlap.runningKeys).toEqual(['r3']);
	});

	it('queue: queues up to the limit, skips beyond it, starts the next when a run ends', () => {
		const overlap = new OverlapController({ kind: 'queue', queueLimit: 2 });
		expect(overlap.onFire(fire(1), 0)).toBe('start');
		expect(overlap.onFire(fire(2), 0)).toBe('queue');
		expect(overlap.onFire(fire(3), 0)).toBe('queue');
		expect(overlap.onFire(fire(4), 0)).toBe('skip');
		expect(overlap.skipReason()).toContain('queue is full (2 waiting');
		expect(overlap.queued.map((f) => f.runKey)).toEqual(['r2', 'r3']);
		expect(overlap.onRunEnded('r1', 0)?.runKey).toBe('r2');
		expect(overlap.runningKeys).toEqual(['r2']);
		expect(overlap.onFire(fire(5), 0)).toBe('queue');
		expect(overlap.onRunEnded('r2', 0)?.runKey).toBe('r3');
		expect(overlap.onRunEnded('r3', 0)?.runKey).toBe('r5');
		expect(overlap.onRunEnded('r5', 0)).toBeUndefined();
		expect(overlap.runningKeys).toEqual([]);
	});

	it('allow-parallel: never more than maxParallel at once', () => {
		const overlap = new OverlapController({ kind: 'allow-parallel', maxParallel: 2 });
		expect(overlap.onFire(fire(1), 0)).toBe('start');
		expect(overlap.onFire(fire(2), 0)).toBe('start');
		expect(overlap.onFire(fire(3), 0)).toBe('skip');
		expect(overlap.skipReason()).toContain('2 runs are already active');
		overlap.onRunEnded('r1', 0);
		expect(overlap.onFire(fire(4), 0)).toBe('start');
		expect(overlap.runningKeys.sort()).toEqual(['r2', 'r4']);
	});

	it('never skips backlog fires and does not count them against the queue limit', () => {
		const overlap = new OverlapController({ kind: 'queue', queueLimit: 1 });
		expect(overlap.onBacklog(fire(1), 0)).toBe('start');
		expect(overlap.onBacklog(fire(2), 0)).toBe('queue');
		expect(overlap.onBacklog(fire(3), 0)).toBe('queue');
		expect(overlap.onFire(fire(4), 0)).toBe('queue');
		expect(overlap.onFire(fire(5), 0)).toBe('skip');
		expect(['r1', 'r2', 'r3'].map((key) => overlap.onRunEnded(key, 0)?.runKey)).toEqual([
			'r2',
			'r3',
			'r4',
		]);
	});

	it('ignores the end of a run it does not know (e.g. one started before a restart)', () => {
		const overlap = new OverlapController({ kind: 'skip-if-running' });
		overlap.onFire(fire(1), 0);
		expect(overlap.onRunEnded('from-before-restart', 0)).toBeUndefined();
		expect(overlap.runningKeys).toEqual(['r1']);
	});

	it.each([
		[
			{ kind: 'queue', queueLimit: 0 },
			'queueLimit',
			'Invalid value 0 for "«queueLimit»": must be a whole number from 1 to 1000',
		],
		[
			{ kind: 'allow-parallel', maxParallel: 1.5 },
			'maxParallel',
			'Invalid value 1.5 for "«maxParallel»": must be a whole number from 1 to 100',
		],
		[
			{ kind: 'whenever' },
			'overlap',
			'Invalid value "whenever" for "«overlap»": use skip-if-running, queue or allow-parallel',
		],
	])('rejects %j naming %s', (policy, field, message) => {
		expect(() => new OverlapController(policy as never)).toThrow(
			expect.objectContaining({ field, message }),
		);
	});
});
