import type { Clock } from '../clock';
import { FakeClock, flushPromises } from '../../test/support/fakeClock';
import { CronSchedule } from './cron';
import {
	CREATE_ATTEMPTS,
	CREATE_RETRY_DELAYS_MS,
	type MissedWindows,
	missedWindowsMessage,
	previewItem,
	ScheduleEngine,
	SETTLE_WAIT_MS,
} from './engine';
import type { ScheduleEngineOptions } from './engine';
import type { StartedFire } from './fire';
import { attemptKey, jitterFor, runKey } from './fire';
import type { ScheduleState } from './history';
import { IntervalSchedule } from './interval';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../units';

const at = (iso: string) => Date.parse(iso);
const iso = (time: number) => new Date(time).toISOString();
const T0 = at('2026-01-01T00:00:00Z');
const hourly = new IntervalSchedule(HOUR_MS);

/** An engine on a fake clock whose persisted state survives "restarts" (new engines) as JSON. */
function setup(clock = new FakeClock(T0)) {
	let stored: unknown;
	const persisted: ScheduleState[] = [];
	const started: StartedFire[] = [];
	const errors: Error[] = [];
	const emit = jest.fn((fires: StartedFire[]) => void started.push(...fires));
	const engineWith = (options: Partial<ScheduleEngineOptions> = {}) =>
		new ScheduleEngine({
			clock,
			scheduleId: 's',
			schedule: hourly,
			storedState: stored,
			emit,
			write: (state) => {
				persisted.push(state);
				stored = JSON.parse(JSON.stringify(state));
			},
			onError: (error) => errors.push(error),
			...options,
		});
	return {
		clock,
		engineWith,
		started,
		persisted,
		errors,
		emit,
		stored: () => stored as ScheduleState,
	};
}

describe('ScheduleEngine', () => {
	it('fires each window on time, records it and persists the cursor', async () => {
		const { clock, engineWith, started, stored } = setup();
		const engine = engineWith();
		const report = await engine.activate();
		expect(report).toEqual({
			settling: 0,
			missedCount: 0,
			startedCount: 0,
			nextFireAt: T0 + HOUR_MS,
		});
		expect(stored().lastDeclaredFire).toBe(T0);

		await clock.advance(HOUR_MS);
		expect(started).toEqual([
			{
				runKey: runKey('s', T0 + HOUR_MS),
				declaredAt: T0 + HOUR_MS,
				kind: 'scheduled',
				actualAt: T0 + HOUR_MS,
				latenessMs: 0,
				reprocessing: false,
			},
		]);
		await clock.advance(HOUR_MS); // 01:00 still running: 02:00 is skipped
		await engine.fireEnded(started[0].runKey);
		await clock.advance(HOUR_MS);
		expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + HOUR_MS, T0 + 3 * HOUR_MS]);
		expect(stored().lastDeclaredFire).toBe(T0 + 3 * HOUR_MS);
		expect(stored().history.map((record) => record.outcome)).toEqual(['fired', 'skipped', 'fired']);
		expect(stored().history[1].reason).toContain('skip-if-running');
		expect(clock.pendingTimers()).toBe(1);
	});

	it('writes each run to the outbox before emitting it; a settled run leaves with the next write', async () => {
		const { clock, engineWith, emit, persisted, stored } = setup();
		const engine = engineWith({ overlap: { kind: 'queue', queueLimit: 5 } });
		await engine.activate();
		await clock.advance(HOUR_MS); // 01:00 starts
		const [fire] = emit.mock.calls[0][0];
		const writtenBeforeEmit = persisted.at(-1)!;
		expect(writtenBeforeEmit.outbox).toEqual([{ key: fire.runKey, run: fire }]);
		expect(writtenBeforeEmit.history.at(-1)).toMatchObject({
			outcome: 'fired',
			runKey: fire.runKey,
			actualAt: T0 + HOUR_MS,
		});

		await clock.advance(HOUR_MS); // 02:00 queued
		await engine.fireEnded(fire.runKey); // the queued 02:00 starts now, in the same write as 01:00 leaving
		const [queuedFire] = emit.mock.calls[1][0];
		expect(queuedFire.declaredAt).toBe(T0 + 2 * HOUR_MS);
		expect(stored().queued).toEqual([]);
		expect(stored().outbox.map((entry) => entry.key)).toEqual([queuedFire.runKey]);
		expect(stored().history.map((record) => record.outcome)).toEqual(['fired', 'queued', 'fired']);
	});

	it('emits again at activation the runs written but not settled (a crash after the write), holding their slots until settled', async () => {
		const { clock, engineWith, emit, stored } = setup();
		await engineWith().activate();
		await clock.advance(HOUR_MS); // 01:00 written and emitted, then "n8n dies" before settling it
		const restarted = engineWith();
		await restarted.activate();
		expect(
			emit.mock.calls.map((call) => call[0].map((fire: StartedFire) => fire.declaredAt)),
		).toEqual([[T0 + HOUR_MS], [T0 + HOUR_MS]]);
		await clock.advance(HOUR_MS); // 02:00: the re-emitted 01:00 still holds the slot
		expect(stored().history.at(-1)).toMatchObject({
			outcome: 'skipped',
			declaredAt: T0 + 2 * HOUR_MS,
		});
		await restarted.fireEnded(runKey('s', T0 + HOUR_MS)); // n8n refused it as a duplicate
		await clock.advance(HOUR_MS);
		expect(stored().history.at(-1)).toMatchObject({
			outcome: 'fired',
			declaredAt: T0 + 3 * HOUR_MS,
		});
		expect(stored().outbox.map((entry) => entry.run.declaredAt)).toEqual([T0 + 3 * HOUR_MS]);
	});

	it('after a quick restart, a window due at activation waits for n8n to settle the re-emitted last run instead of being skipped', async () => {
		const { clock, engineWith, emit, stored } = setup();
		const first = engineWith();
		await first.activate();
		await clock.advance(HOUR_MS); // 01:00 runs and ends; its end is written, but no save follows
		await first.fireEnded(runKey('s', T0 + HOUR_MS));
		first.deactivate();
		const storedAtStop = {
			...stored(),
			outbox: [{ key: runKey('s', T0 + HOUR_MS), run: emit.mock.calls[0][0][0] }],
		};
		clock.jumpTo(T0 + 2 * HOUR_MS + 20_000); // n8n was down across 02:00, for less than the late grace
		const restarted = engineWith({ storedState: storedAtStop });
		expect(await restarted.activate()).toMatchObject({ settling: 1 });
		expect(emit.mock.calls.at(-1)?.[0].map((fire: StartedFire) => fire.declaredAt)).toEqual([
			T0 + HOUR_MS,
		]);
		await restarted.fireEnded(runKey('s', T0 + HOUR_MS)); // n8n refuses it: that run exists
		expect(emit.mock.calls.at(-1)?.[0].map((fire: StartedFire) => fire.declaredAt)).toEqual([
			T0 + 2 * HOUR_MS,
		]);
		expect(stored().history.at(-1)).toMatchObject({
			outcome: 'fired',
			declaredAt: T0 + 2 * HOUR_MS,
		});
	});

	it('a re-emitted run that n8n creates now (a crash before its creation) holds its slot: after the settle wait, the window due is skipped', async () => {
		const { clock, engineWith, emit, stored } = setup();
		await engineWith().activate();
		await clock.advance(HOUR_MS); // 01:00 written and emitted, then "n8n dies" before creating it
		clock.jumpTo(T0 + 2 * HOUR_MS + 20_000);
		const restarted = engineWith();
		expect(await restarted.activate()).toMatchObject({
			settling: 1,
			nextFireAt: clock.now() + SETTLE_WAIT_MS,
		});
		await clock.advance(SETTLE_WAIT_MS); // 01:00 is running now: no settlement comes
		expect(stored().history.at(-1)).toMatchObject({
			outcome: 'skipped',
			declaredAt: T0 + 2 * HOUR_MS,
		});
		expect(emit).toHaveBeenCalledTimes(2); // 01:00, then 01:00 again; never 02:00
		await restarted.fireEnded(runKey('s', T0 + HOUR_MS));
		await clock.advance(HOUR_MS);
		expect(stored().history.at(-1)).toMatchObject({
			outcome: 'fired',
			declaredAt: T0 + 3 * HOUR_MS,
		});
	});

	it('a write while re-emitted runs settle keeps the queue carried over (model seed 1: a kill then lost a run-all window)', async () => {
		// test/model/schedule: run-all, skip-if-running; a missed window queued behind another's run,
		// n8n killed; the next activation re-emits that run and writes while waiting for it to settle.
		const { clock, engineWith, stored } = setup();
		const catchUp = { catchUp: 'run-all' as const, lateGraceMs: 0 };
		await engineWith(catchUp).activate();
		clock.jumpTo(T0 + 2 * HOUR_MS + 1); // down across 01:00 and 02:00: 01:00 runs, 02:00 waits
		await engineWith(catchUp).activate();
		expect(stored().outbox.map((entry) => entry.run.declaredAt)).toEqual([T0 + HOUR_MS]);
		expect(stored().queued.map((fire) => fire.declaredAt)).toEqual([T0 + 2 * HOUR_MS]);
		clock.jumpTo(T0 + 2 * HOUR_MS + 2); // killed; back at once: 01:00 is re-emitted
		expect(await engineWith(catchUp).activate()).toMatchObject({ settling: 1 });
		// That write is what n8n stores with the re-emit: a kill now must not lose 02:00.
		expect(stored().queued.map((fire) => fire.declaredAt)).toEqual([T0 + 2 * HOUR_MS]);
	});

	it('a window whose run is still in the outbox is not planned again from stale state: the outbox re-emits it', async () => {
		const { clock, engineWith, emit } = setup();
		await engineWith().activate();
		await clock.advance(HOUR_MS); // 01:00 written and emitted, never settled, then "n8n stops"
		const stale = JSON.parse(JSON.stringify(emit.mock.calls[0][0][0])) as StartedFire;
		// Stored state rolled back before 01:00 but still holding its outbox entry.
		const written: ScheduleState[] = [];
		const restarted = new ScheduleEngine({
			clock,
			scheduleId: 's',
			schedule: hourly,
			catchUp: 'run-all',
			lateGraceMs: 0,
			storedState: {
				v: 1,
				scheduleFingerprint: hourly.fingerprint,
				lastDeclaredFire: T0,
				queued: [],
				outbox: [{ key: stale.runKey, run: stale }],
				history: [],
			},
			emit,
			write: (state) => void written.push(state),
			onError: (error) => {
				throw error;
			},
		});
		await clock.advance(MINUTE_MS);
		expect(await restarted.activate()).toMatchObject({ settling: 1 });
		expect(
			emit.mock.calls
				.slice(1)
				.map((call) => call[0].map((fire: StartedFire) => `${fire.kind}@${iso(fire.declaredAt)}`)),
		).toEqual([['scheduled@2026-01-01T01:00:00.000Z']]);
		await restarted.fireEnded(stale.runKey); // n8n refused the re-emit: the slot is free
		expect(emit).toHaveBeenCalledTimes(2); // the windows due were decided: 01:00 is not planned again
		await clock.advance(HOUR_MS);
		expect(emit.mock.calls.at(-1)?.[0][0].declaredAt).toBe(T0 + 2 * HOUR_MS);
		expect(written.at(-1)?.history.map((record) => record.outcome)).toEqual(['fired']);
	});

	it('frees a slot whose run never reports its end after the maximum run duration, recorded as released', async () => {
		const { clock, engineWith, started, stored } = setup();
		await engineWith({ maxRunMs: 90 * MINUTE_MS }).activate();
		await clock.advance(2 * HOUR_MS); // 01:00 runs, never reported; 02:00 skipped (60 min held)
		await clock.advance(HOUR_MS); // 03:00: held 120 min > 90: released, then 03:00 fires
		expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + HOUR_MS, T0 + 3 * HOUR_MS]);
		expect(stored().history.map((record) => record.outcome)).toEqual([
			'fired',
			'skipped',
			'released',
			'fired',
		]);
		expect(stored().history[2]).toMatchObject({
			declaredAt: T0 + HOUR_MS,
			reason: expect.stringContaining('maximum run duration (90 min)'),
		});
	});

	it('refuses a maximum run duration below a minute, naming the field', () => {
		const { engineWith } = setup();
		expect(() => engineWith({ maxRunMs: 1_000 })).toThrow(
			expect.objectContaining({
				field: 'maxRunMinutes',
				message:
					'Invalid value 0.0166666666667 for "«maxRunMinutes»": must be from 1 to 43200 minutes (30d)',
			}),
		);
	});

	it('fires at declared time + deterministic jitter and measures lateness from the declared time', async () => {
		const { clock, engineWith, started } = setup();
		const engine = engineWith({
			jitterMs: 10 * MINUTE_MS,
			overlap: { kind: 'allow-parallel', maxParallel: 5 },
		});
		await engine.activate();
		const windows = [1, 2, 3].map((n) => T0 + n * HOUR_MS);
		const jitters = windows.map((window) => jitterFor(runKey('s', window), 10 * MINUTE_MS));
		expect(new Set(jitters).size).toBe(3);
		await clock.advance(4 * HOUR_MS);
		expect(started.map((fire) => [fire.actualAt, fire.latenessMs])).toEqual(
			windows.map((window, i) => [window + jitters[i], jitters[i]]),
		);
	});

	it('fires a cron schedule in its zone', async () => {
		const { clock, engineWith, started } = setup();
		const engine = engineWith({
			schedule: new CronSchedule('30 9 * * MON-FRI', 'America/New_York'),
			overlap: { kind: 'allow-parallel', maxParallel: 5 },
		});
		const report = await engine.activate();
		expect(iso(report.nextFireAt)).toBe('2026-01-01T14:30:00.000Z'); // Thursday 09:30 EST
		await clock.advance(5 * DAY_MS);
		expect(started.map((fire) => iso(fire.actualAt))).toEqual([
			'2026-01-01T14:30:00.000Z',
			'2026-01-02T14:30:00.000Z',
			'2026-01-05T14:30:00.000Z',
		]);
	});

	describe('activation after downtime', () => {
		/** Runs one engine for two hours, then "restarts" 10 hours later with the given options. */
		async function restartAfterDowntime(options: Partial<ScheduleEngineOptions>) {
			const context = setup();
			const first = context.engineWith({ overlap: { kind: 'allow-parallel', maxParallel: 10 } });
			await first.activate();
			await context.clock.advance(2 * HOUR_MS);
			for (const fire of context.started) await first.fireEnded(fire.runKey); // their runs ended
			first.deactivate();
			context.started.length = 0;
			context.clock.jumpTo(T0 + 12 * HOUR_MS + 5 * MINUTE_MS);
			const second = context.engineWith(options);
			const report = await second.activate();
			return { ...context, engine: second, report };
		}
		const missedWindows = [3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((n) => T0 + n * HOUR_MS);

		it('skip: starts nothing, records one missed entry, resumes with the next window', async () => {
			const { report, started, stored, clock } = await restartAfterDowntime({ catchUp: 'skip' });
			expect(report).toMatchObject({
				missedCount: 10,
				startedCount: 0,
				nextFireAt: T0 + 13 * HOUR_MS,
			});
			expect(started).toEqual([]);
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'missed',
				count: 10,
				firstDeclaredAt: missedWindows[0],
				declaredAt: missedWindows[9],
			});
			await clock.advance(HOUR_MS);
			expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + 13 * HOUR_MS]);
		});

		it('Report Missed Windows: the windows missed while inactive are told once, with what catch-up did; not again at the next activation', async () => {
			const told: MissedWindows[] = [];
			const { report, engineWith, clock } = await restartAfterDowntime({
				catchUp: 'run-all',
				runAllLimit: 3,
				overlap: { kind: 'allow-parallel', maxParallel: 10 },
				onMissed: (missed) => told.push(missed),
			});
			expect(report).toMatchObject({ missedCount: 10, startedCount: 3 });
			expect(told).toEqual([
				{
					count: 10,
					first: missedWindows[0],
					last: missedWindows[9],
					catchUp: 'run-all',
					runsStarted: 3,
				},
			]);
			expect(missedWindowsMessage(told[0])).toBe(
				'Missed 10 windows (2026-01-01T03:00:00.000Z to 2026-01-01T12:00:00.000Z) while the trigger was inactive (n8n down or the workflow unpublished): the newest 3 of them run (catch-up: run-all)',
			);
			await clock.advance(2 * HOUR_MS);
			expect(told).toHaveLength(1);
			await engineWith({ onMissed: (missed) => told.push(missed) }).activate();
			expect(told).toHaveLength(1);
			expect(missedWindowsMessage({ ...told[0], catchUp: 'skip', runsStarted: 0, count: 1 })).toBe(
				'Missed 1 window (2026-01-01T03:00:00.000Z) while the trigger was inactive (n8n down or the workflow unpublished): none of them run (catch-up: skip)',
			);
		});

		it('coalesce: one reprocessing run covering all missed windows', async () => {
			const { report, started, stored } = await restartAfterDowntime({ catchUp: 'coalesce' });
			expect(report).toMatchObject({ missedCount: 10, startedCount: 1 });
			expect(started).toHaveLength(1);
			expect(started[0]).toMatchObject({
				kind: 'coalesced',
				declaredAt: missedWindows[9],
				reprocessing: true,
				latenessMs: 5 * MINUTE_MS,
			});
			expect(started[0].coalesced).toEqual({
				count: 10,
				firstDeclaredAt: missedWindows[0],
				lastDeclaredAt: missedWindows[9],
				windows: missedWindows,
			});
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'coalesced',
				count: 10,
				firstDeclaredAt: missedWindows[0],
			});
		});

		it('coalesce: a crash before the state write, then a longer outage, starts the same run again under the same key (folded, not repeated)', async () => {
			const context = setup();
			const first = context.engineWith();
			await first.activate();
			await context.clock.advance(2 * HOUR_MS);
			for (const fire of context.started) await first.fireEnded(fire.runKey);
			first.deactivate();
			const beforeOutage = context.stored();
			// Down 10 hours: the activation starts one coalesced run for 03:00..12:00, then n8n dies
			// before its state write reached the database (the run exists; the stored state is as before).
			context.clock.jumpTo(T0 + 12 * HOUR_MS + 5 * MINUTE_MS);
			context.started.length = 0;
			await context.engineWith({ catchUp: 'coalesce' }).activate();
			const [crashed] = context.started;
			expect(crashed.coalesced).toMatchObject({ count: 10, firstDeclaredAt: T0 + 3 * HOUR_MS });
			// Down 5 hours more, then activated from the stored state of before the first outage.
			context.clock.jumpTo(T0 + 17 * HOUR_MS + 5 * MINUTE_MS);
			context.started.length = 0;
			const again = setup(context.clock);
			const third = again.engineWith({ catchUp: 'coalesce', storedState: beforeOutage });
			await third.activate();
			const [repeat] = again.started;
			// The same start: n8n refuses it by its deduplication key, instead of running 03:00..12:00 again.
			expect(repeat.runKey).toBe(crashed.runKey);
			// The windows of the longer outage are folded into that one run (coalesce: one run per stretch
			// of missed windows): the history says how many windows the stretch held, and from which on.
			expect(repeat.coalesced).toMatchObject({
				count: 15,
				firstDeclaredAt: T0 + 3 * HOUR_MS,
				lastDeclaredAt: T0 + 17 * HOUR_MS,
			});
			await third.fireEnded(repeat.runKey); // refused as a duplicate: settled
			expect(again.stored().lastDeclaredFire).toBe(T0 + 17 * HOUR_MS);
			expect(again.stored().outbox).toEqual([]);
		});

		it('run-all: runs the newest windows up to the limit, one at a time under skip-if-running', async () => {
			const { engine, report, started, stored } = await restartAfterDowntime({
				catchUp: 'run-all',
				runAllLimit: 4,
			});
			expect(report).toMatchObject({ missedCount: 10, startedCount: 1 });
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'caught_up',
				declaredAt: missedWindows[6],
			});
			expect(stored().history.at(-2)).toMatchObject({
				outcome: 'missed',
				count: 6,
				declaredAt: missedWindows[5],
				reason: expect.stringContaining('run-all limit of 4'),
			});
			expect(stored().queued.map((fire) => fire.declaredAt)).toEqual(missedWindows.slice(7));
			for (let i = 0; i < 3; i++) await engine.fireEnded(started[i].runKey);
			expect(started.map((fire) => [fire.kind, fire.declaredAt, fire.reprocessing])).toEqual(
				missedWindows.slice(6).map((window) => ['catch-up', window, true]),
			);
			expect(stored().queued).toEqual([]);
		});

		it('run-all under allow-parallel starts up to maxParallel at once', async () => {
			const { report, started } = await restartAfterDowntime({
				catchUp: 'run-all',
				runAllLimit: 4,
				overlap: { kind: 'allow-parallel', maxParallel: 3 },
			});
			expect(report.startedCount).toBe(3);
			expect(started.map((fire) => fire.declaredAt)).toEqual(missedWindows.slice(6, 9));
		});

		it('an activation returns while its catch-up runs are still being emitted (n8n abandons a publication that takes about 84 s)', async () => {
			const context = setup();
			await context.engineWith().activate();
			context.clock.jumpTo(T0 + 12 * HOUR_MS + 5 * MINUTE_MS);
			// n8n has not written the state yet, so the emitter holds the rest of the runs (emitRuns.ts).
			const emitting: StartedFire[][] = [];
			const engine = context.engineWith({
				catchUp: 'run-all',
				overlap: { kind: 'allow-parallel', maxParallel: 10 },
				emit: (fires) => {
					emitting.push(fires);
					return new Promise<void>(() => undefined);
				},
			});
			const report = await engine.activate();
			expect(report.startedCount).toBe(10);
			expect(emitting.flat()).toHaveLength(10);
			// The engine goes on deciding windows meanwhile (the next one meets ten runs going).
			await context.clock.advance(HOUR_MS);
			expect(context.stored().history.at(-1)).toMatchObject({
				declaredAt: T0 + 13 * HOUR_MS,
				outcome: 'skipped',
			});
		});

		it('an emit that fails at activation is reported, not thrown into the activation', async () => {
			const context = setup();
			await context.engineWith().activate();
			context.clock.jumpTo(T0 + 3 * HOUR_MS + 5 * MINUTE_MS);
			const engine = context.engineWith({
				catchUp: 'run-all',
				emit: () => Promise.reject(new Error('n8n refused the emit')),
			});
			await expect(engine.activate()).resolves.toMatchObject({ startedCount: 1 });
			await flushPromises();
			expect(context.errors.map((error) => error.message)).toEqual(['n8n refused the emit']);
		});

		it('does not catch up windows of a schedule that has since changed', async () => {
			const { report, started, stored } = await restartAfterDowntime({
				catchUp: 'run-all',
				schedule: new IntervalSchedule(2 * HOUR_MS),
			});
			expect(report).toMatchObject({
				reset: 'schedule-changed',
				missedCount: 0,
				startedCount: 0,
				nextFireAt: T0 + 14 * HOUR_MS,
			});
			expect(report.notice).toContain('not caught up');
			expect(started).toEqual([]);
			expect(stored().history.map((record) => record.outcome)).toEqual(['fired', 'fired']);
		});
	});

	it('fires a window that is only a little late after a quick restart, as a normal fire', async () => {
		const { clock, engineWith, started, stored } = setup();
		await engineWith().activate();
		clock.jumpTo(T0 + HOUR_MS + 20_000); // down across the 01:00 window, back 20 s later
		const report = await engineWith({ catchUp: 'skip' }).activate();
		expect(report).toMatchObject({ missedCount: 0, startedCount: 1 });
		expect(started[0]).toMatchObject({
			kind: 'scheduled',
			declaredAt: T0 + HOUR_MS,
			latenessMs: 20_000,
		});
		expect(stored().history.at(-1)?.outcome).toBe('fired');
	});

	it('gives a window that is due at activation its slot first; the catch-up runs wait, none is skipped', async () => {
		const { clock, engineWith, started, stored } = setup();
		await engineWith().activate();
		clock.jumpTo(T0 + 3 * HOUR_MS + 20_000); // 01:00 and 02:00 missed, 03:00 only 20 s late
		const engine = engineWith({ catchUp: 'run-all' });
		const report = await engine.activate();
		expect(report).toMatchObject({ missedCount: 2, startedCount: 1 });
		expect(started.map((fire) => [fire.kind, fire.declaredAt])).toEqual([
			['scheduled', T0 + 3 * HOUR_MS],
		]);
		await engine.fireEnded(started[0].runKey);
		await engine.fireEnded(started[1].runKey);
		expect(started.map((fire) => [fire.kind, fire.declaredAt])).toEqual([
			['scheduled', T0 + 3 * HOUR_MS],
			['catch-up', T0 + HOUR_MS],
			['catch-up', T0 + 2 * HOUR_MS],
		]);
		expect(stored().history.map((record) => record.outcome)).toEqual([
			'fired',
			'caught_up',
			'caught_up',
		]);
	});

	it('treats windows passed while the process was suspended as missed', async () => {
		// A clock whose timer the test runs late, as after a suspended laptop wakes up.
		let now = T0;
		const timers: Array<() => void> = [];
		const lateClock: Clock = {
			now: () => now,
			setTimer: (fn) => (timers.push(fn), { cancel: () => undefined }),
		};
		const { engineWith, started, stored } = setup();
		await engineWith({ clock: lateClock, catchUp: 'skip' }).activate();
		now = T0 + 5 * HOUR_MS + 30 * MINUTE_MS; // the 01:00 timer only runs at 05:30
		timers.shift()?.();
		await flushPromises();
		expect(started).toEqual([]);
		expect(stored().history).toEqual([
			expect.objectContaining({ outcome: 'missed', count: 5, declaredAt: T0 + 5 * HOUR_MS }),
		]);
		expect(stored().lastDeclaredFire).toBe(T0 + 5 * HOUR_MS);
		expect(timers).toHaveLength(1);
	});

	describe('overlap', () => {
		it('queue: records queued, then fired when the running run ends; overflow is skipped', async () => {
			const { clock, engineWith, started, stored } = setup();
			const engine = engineWith({ overlap: { kind: 'queue', queueLimit: 1 } });
			await engine.activate();
			await clock.advance(3 * HOUR_MS);
			expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + HOUR_MS]);
			expect(stored().history.map((record) => record.outcome)).toEqual([
				'fired',
				'queued',
				'skipped',
			]);
			expect(stored().history[2].reason).toContain('queue is full');
			expect(stored().queued.map((fire) => fire.declaredAt)).toEqual([T0 + 2 * HOUR_MS]);

			await engine.fireEnded(started[0].runKey);
			expect(started[1]).toMatchObject({
				declaredAt: T0 + 2 * HOUR_MS,
				actualAt: T0 + 3 * HOUR_MS,
				latenessMs: HOUR_MS,
				reprocessing: false,
			});
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'fired',
				declaredAt: T0 + 2 * HOUR_MS,
			});
			expect(stored().queued).toEqual([]);
		});

		it('allow-parallel: never more than maxParallel runs at once', async () => {
			const { clock, engineWith, started, stored } = setup();
			const engine = engineWith({ overlap: { kind: 'allow-parallel', maxParallel: 2 } });
			await engine.activate();
			await clock.advance(3 * HOUR_MS);
			expect(started).toHaveLength(2);
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'skipped',
				reason: expect.stringContaining('2 runs are already active'),
			});
			await engine.fireEnded(started[0].runKey);
			await clock.advance(HOUR_MS);
			expect(started.map((fire) => fire.declaredAt)).toEqual(
				[1, 2, 4].map((n) => T0 + n * HOUR_MS),
			);
		});

		it('starts fires that were queued before a restart once the run that held the slot is settled', async () => {
			const { clock, engineWith, started, stored } = setup();
			await engineWith({ overlap: { kind: 'queue', queueLimit: 5 } }).activate();
			await clock.advance(2 * HOUR_MS); // 01:00 runs (never reported ended), 02:00 queued
			clock.jumpTo(T0 + 2 * HOUR_MS + 10 * MINUTE_MS);
			const engine = engineWith({ overlap: { kind: 'queue', queueLimit: 5 } });
			const report = await engine.activate();
			expect(report.startedCount).toBe(0);
			await engine.fireEnded(started[0].runKey); // n8n settles the re-emitted 01:00
			expect(started.map((fire) => fire.declaredAt)).toEqual([
				T0 + HOUR_MS,
				T0 + HOUR_MS,
				T0 + 2 * HOUR_MS,
			]);
			expect(stored().queued).toEqual([]);
		});

		it('retries a run n8n could not create under a fresh attempt key, holding its slot; recorded', async () => {
			const { clock, engineWith, emit, started, stored } = setup();
			const engine = engineWith();
			await engine.activate();
			await clock.advance(HOUR_MS);
			await engine.fireNotCreated(started[0].runKey, new Error('database is locked'));
			expect(stored().history.map((record) => [record.outcome, record.reason])).toEqual([
				['fired', undefined],
				[
					'retried',
					`n8n could not create the run (attempt 1 of ${CREATE_ATTEMPTS}): database is locked; attempt 2 in ${CREATE_RETRY_DELAYS_MS[0] / 1000} s`,
				],
			]);
			// Stored before the retry is emitted: a restart in between emits attempt 2 (see below).
			expect(stored().outbox.map((entry) => [entry.run.declaredAt, entry.run.attempt])).toEqual([
				[T0 + HOUR_MS, 2],
			]);
			await clock.advance(CREATE_RETRY_DELAYS_MS[0]);
			expect(started.map((fire) => [fire.declaredAt, fire.attempt, attemptKey(fire)])).toEqual([
				[T0 + HOUR_MS, undefined, runKey('s', T0 + HOUR_MS)],
				[T0 + HOUR_MS, 2, `${runKey('s', T0 + HOUR_MS)}#2`],
			]);
			expect(emit).toHaveBeenCalledTimes(2);
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'fired',
				declaredAt: T0 + HOUR_MS,
				attempt: 2,
				actualAt: T0 + HOUR_MS + CREATE_RETRY_DELAYS_MS[0],
			});
			await engine.fireEnded(started[1].runKey);
			await clock.advance(HOUR_MS - CREATE_RETRY_DELAYS_MS[0]);
			expect(started.map((fire) => fire.declaredAt)).toEqual([
				T0 + HOUR_MS,
				T0 + HOUR_MS,
				T0 + 2 * HOUR_MS,
			]);
		});

		describe('When a Run Fails: Start the Window Again', () => {
			const retry = { maxAttempts: 3, firstDelayMs: 60_000, factor: 2, maxDelayMs: HOUR_MS };
			const failed = { status: 'error', errorMessage: 'partner down' };

			it("a window whose run fails twice, then succeeds: three runs under the same run key (n8n's key with /attempt<n>), holding the slot; the history records each attempt and the outcome", async () => {
				const { clock, engineWith, started, stored } = setup();
				const engine = engineWith({ retry });
				await engine.activate();
				await clock.advance(HOUR_MS);
				await engine.fireEnded(started[0].runKey, failed);
				// Stored before the next run is emitted: a restart in between emits it (see below).
				expect(stored().outbox.map((entry) => entry.run.runAttempt)).toEqual([2]);
				await clock.advance(60_000);
				await engine.fireEnded(started[1].runKey, { status: 'crashed' });
				await clock.advance(120_000);
				await engine.fireEnded(started[2].runKey, { status: 'success' });
				const window = runKey('s', T0 + HOUR_MS);
				expect(started.map((fire) => [fire.runKey, fire.runAttempt, attemptKey(fire)])).toEqual([
					[window, undefined, window],
					[window, 2, `${window}/attempt2`],
					[window, 3, `${window}/attempt3`],
				]);
				expect(
					stored().history.map((record) => [record.outcome, record.runAttempt, record.reason]),
				).toEqual([
					['fired', undefined, undefined],
					['failed', undefined, 'run 1 of 3 failed: partner down; run 2 in 1min'],
					['fired', 2, undefined],
					['failed', 2, 'run 2 of 3 failed: the run ended with status crashed; run 3 in 2min'],
					['fired', 3, undefined],
					['recovered', 3, 'run 3 of 3 did not fail'],
				]);
				expect(stored().outbox).toEqual([]);
				// The slot was held throughout and is free now: the next window fires.
				await clock.advance(HOUR_MS - 180_000);
				expect(started.at(-1)?.declaredAt).toBe(T0 + 2 * HOUR_MS);
			});

			it('after Max Attempts failed runs the window is recorded failed, the last time, and its slot freed', async () => {
				const { clock, engineWith, started, stored } = setup();
				const engine = engineWith({ retry: { ...retry, maxAttempts: 2 } });
				await engine.activate();
				await clock.advance(HOUR_MS);
				await engine.fireEnded(started[0].runKey, failed);
				await clock.advance(60_000);
				await engine.fireEnded(started[1].runKey, failed);
				expect(stored().history.at(-1)).toMatchObject({
					outcome: 'failed',
					runAttempt: 2,
					reason: 'run 2 of 2 failed, the last: partner down',
				});
				await clock.advance(HOUR_MS - 60_000);
				expect(started.map((fire) => [fire.declaredAt, fire.runAttempt])).toEqual([
					[T0 + HOUR_MS, undefined],
					[T0 + HOUR_MS, 2],
					[T0 + 2 * HOUR_MS, undefined],
				]);
			});

			it('a restart during the backoff (a kill -9 alike: only the stored state goes on) waits out what is left of it, holding the slot; a restart after it emits the run at once', async () => {
				const { clock, engineWith, started, stored } = setup();
				const first = engineWith({ retry });
				await first.activate();
				await clock.advance(HOUR_MS);
				await first.fireEnded(started[0].runKey, failed);
				const failedAt = clock.now();
				first.deactivate();
				clock.jumpTo(failedAt + 10_000);
				const restarted = engineWith({ retry });
				expect(await restarted.activate()).toMatchObject({ settling: 0, startedCount: 0 });
				expect(started).toHaveLength(1);
				await clock.advance(50_000 - 1);
				expect(started).toHaveLength(1);
				await clock.advance(1);
				expect(started.map((fire) => [fire.declaredAt, fire.runAttempt, fire.actualAt])).toEqual([
					[T0 + HOUR_MS, undefined, T0 + HOUR_MS],
					[T0 + HOUR_MS, 2, failedAt + 60_000],
				]);
				expect(stored().outbox.map((entry) => entry.run.dueAt)).toEqual([undefined]);
				// Its second failure waits 2 min; n8n is down past that: the run goes out at activation.
				await restarted.fireEnded(started[1].runKey, failed);
				restarted.deactivate();
				clock.jumpTo(clock.now() + 3 * 60_000);
				await engineWith({ retry }).activate();
				expect(started.map((fire) => fire.runAttempt)).toEqual([undefined, 2, 3]);
			});

			it('the window waiting out its backoff after a restart keeps its slot: the next window is skipped, not run beside it', async () => {
				const { clock, engineWith, started, stored } = setup();
				const longer = {
					...retry,
					firstDelayMs: HOUR_MS + 30 * MINUTE_MS,
					maxDelayMs: 2 * HOUR_MS,
				};
				const first = engineWith({ retry: longer });
				await first.activate();
				await clock.advance(HOUR_MS);
				await first.fireEnded(started[0].runKey, failed);
				first.deactivate();
				clock.jumpTo(T0 + HOUR_MS + 10 * MINUTE_MS);
				await engineWith({ retry: longer }).activate();
				await clock.advance(50 * MINUTE_MS); // 02:00: the 01:00 window still holds the slot
				expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + HOUR_MS]);
				expect(stored().history.at(-1)).toMatchObject({
					outcome: 'skipped',
					declaredAt: T0 + 2 * HOUR_MS,
				});
				await clock.advance(30 * MINUTE_MS);
				expect(started.map((fire) => [fire.declaredAt, fire.runAttempt])).toEqual([
					[T0 + HOUR_MS, undefined],
					[T0 + HOUR_MS, 2],
				]);
			});

			it('a backoff longer than Max Run Duration does not release the waiting window: its next run goes when due, its slot held till it ends', async () => {
				const { clock, engineWith, started, stored } = setup();
				const long = { ...retry, firstDelayMs: 3 * HOUR_MS, maxDelayMs: 3 * HOUR_MS };
				const engine = engineWith({ retry: long, maxRunMs: HOUR_MS });
				await engine.activate();
				await clock.advance(HOUR_MS);
				await engine.fireEnded(started[0].runKey, failed);
				await clock.advance(3 * HOUR_MS);
				expect(started.map((fire) => [fire.declaredAt, fire.runAttempt])).toEqual([
					[T0 + HOUR_MS, undefined],
					[T0 + HOUR_MS, 2],
				]);
				expect(stored().history.map((record) => record.outcome)).not.toContain('released');
				// Its run holds the slot from its start (04:00): 05:00 is skipped, not run beside it.
				await clock.advance(HOUR_MS);
				expect(stored().history.at(-1)).toMatchObject({
					outcome: 'skipped',
					declaredAt: T0 + 5 * HOUR_MS,
				});
			});

			it('on an n8n without deduplication keys (1.x: a run leaves the outbox once n8n created it), a failed run is still retried', async () => {
				const { clock, engineWith, started, stored } = setup();
				const engine = engineWith({ retry });
				await engine.activate();
				await clock.advance(HOUR_MS);
				engine.fireCreated(started[0].runKey);
				engine.rewrite();
				expect(stored().outbox).toEqual([]);
				await engine.fireEnded(started[0].runKey, failed);
				await clock.advance(60_000);
				engine.fireCreated(started[1].runKey);
				await engine.fireEnded(started[1].runKey, { status: 'success' });
				expect(started.map((fire) => [fire.declaredAt, fire.runAttempt])).toEqual([
					[T0 + HOUR_MS, undefined],
					[T0 + HOUR_MS, 2],
				]);
				expect(stored().history.map((record) => record.outcome)).toEqual([
					'fired',
					'failed',
					'fired',
					'recovered',
				]);
				expect(stored().outbox).toEqual([]);
			});

			it('a run refused as a duplicate (its end unknown) is neither retried nor recorded recovered', async () => {
				const { clock, engineWith, started, stored } = setup();
				const engine = engineWith({ retry });
				await engine.activate();
				await clock.advance(HOUR_MS);
				await engine.fireEnded(started[0].runKey, failed);
				await clock.advance(60_000);
				await engine.fireEnded(started[1].runKey);
				expect(stored().history.map((record) => record.outcome)).toEqual([
					'fired',
					'failed',
					'fired',
				]);
				expect(stored().outbox).toEqual([]);
			});

			it('Leave It Failed (no policy): a failed run ends the window as before', async () => {
				const { clock, engineWith, started, stored } = setup();
				const engine = engineWith();
				await engine.activate();
				await clock.advance(HOUR_MS);
				await engine.fireEnded(started[0].runKey, failed);
				expect(stored().history.map((record) => record.outcome)).toEqual(['fired']);
				await clock.advance(HOUR_MS);
				expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + HOUR_MS, T0 + 2 * HOUR_MS]);
			});

			it('refuses a policy out of range, naming the field', () => {
				const { engineWith } = setup();
				expect(() => engineWith({ retry: { ...retry, factor: 11 } })).toThrow(
					'Invalid value 11 for "«retryFactor»": must be from 1 to 10',
				);
			});
		});

		it('gives up after the last attempt: the window is recorded missed with every attempt counted, and its slot freed', async () => {
			const { clock, engineWith, started, stored } = setup();
			const engine = engineWith();
			await engine.activate();
			await clock.advance(HOUR_MS);
			for (let attempt = 1; attempt <= CREATE_ATTEMPTS; attempt++) {
				expect(started).toHaveLength(attempt);
				await engine.fireNotCreated(started.at(-1)!.runKey, new Error('database is locked'));
				if (attempt < CREATE_ATTEMPTS) await clock.advance(CREATE_RETRY_DELAYS_MS[attempt - 1]);
			}
			expect(started.map((fire) => attemptKey(fire))).toEqual(
				[1, 2, 3].map((n) =>
					n === 1 ? runKey('s', T0 + HOUR_MS) : `${runKey('s', T0 + HOUR_MS)}#${n}`,
				),
			);
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'missed',
				declaredAt: T0 + HOUR_MS,
				reason: `n8n could not create the run (attempt ${CREATE_ATTEMPTS} of ${CREATE_ATTEMPTS}, giving up): database is locked`,
			});
			expect(stored().outbox).toEqual([]);
			await clock.advance(HOUR_MS);
			expect(started.at(-1)?.declaredAt).toBe(T0 + 2 * HOUR_MS); // the slot was freed
		});

		it('coalesce: a coalesced run n8n could not create is recorded missed for every window it stood for (model seed 1)', async () => {
			const { clock, engineWith, started, stored } = setup();
			const first = engineWith({ catchUp: 'coalesce' });
			await first.activate();
			first.deactivate();
			clock.jumpTo(T0 + 2 * HOUR_MS + 30 * MINUTE_MS); // down across 01:00 and 02:00
			const engine = engineWith({ catchUp: 'coalesce' });
			await engine.activate();
			for (let attempt = 1; attempt <= CREATE_ATTEMPTS; attempt++) {
				await engine.fireNotCreated(started.at(-1)!.runKey, new Error('database is locked'));
				if (attempt < CREATE_ATTEMPTS) await clock.advance(CREATE_RETRY_DELAYS_MS[attempt - 1]);
			}
			expect(started.map((fire) => fire.kind)).toEqual(['coalesced', 'coalesced', 'coalesced']);
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'missed',
				declaredAt: T0 + 2 * HOUR_MS,
				count: 2,
				firstDeclaredAt: T0 + HOUR_MS,
			});
		});

		it('run-all: a catch-up run n8n could not create is retried as a catch-up, also after a restart during the retry wait', async () => {
			const { clock, engineWith, emit, started, stored } = setup();
			const first = engineWith();
			await first.activate();
			first.deactivate();
			clock.jumpTo(T0 + 2 * HOUR_MS + 5 * MINUTE_MS);
			const engine = engineWith({
				catchUp: 'run-all',
				overlap: { kind: 'allow-parallel', maxParallel: 5 },
			});
			await engine.activate();
			expect(started.map((fire) => [fire.kind, fire.declaredAt])).toEqual([
				['catch-up', T0 + HOUR_MS],
				['catch-up', T0 + 2 * HOUR_MS],
			]);
			await engine.fireEnded(started[1].runKey);
			await engine.fireNotCreated(started[0].runKey, new Error('Redis connection lost'));
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'retried',
				declaredAt: T0 + HOUR_MS,
			});
			// n8n restarts before the retry: the new activation emits attempt 2 from the outbox.
			engine.deactivate();
			clock.jumpTo(T0 + 2 * HOUR_MS + 6 * MINUTE_MS);
			const restarted = engineWith({ catchUp: 'run-all' });
			await restarted.activate();
			const retried = emit.mock.calls.at(-1)![0] as StartedFire[];
			expect(retried.map((fire) => [fire.kind, fire.declaredAt, attemptKey(fire)])).toEqual([
				['catch-up', T0 + HOUR_MS, `${runKey('s', T0 + HOUR_MS)}#2`],
			]);
			await restarted.fireEnded(retried[0].runKey);
			expect(stored().outbox).toEqual([]);
			expect(stored().history.filter((r) => r.outcome === 'missed')).toEqual([]);
		});
	});

	describe('a stored state that went back (another copy of the static data overwrote it)', () => {
		/** Two hours of windows, with the state stored after the first one kept aside. */
		async function ranTwoHours() {
			const context = setup();
			const engine = context.engineWith();
			await engine.activate();
			await context.clock.advance(HOUR_MS);
			await engine.fireEnded(context.started[0].runKey);
			const afterFirst = context.stored();
			await context.clock.advance(HOUR_MS);
			await engine.fireEnded(context.started[1].runKey);
			engine.deactivate();
			return { ...context, afterFirst, latest: context.stored() };
		}

		it('counts its writes', async () => {
			const { afterFirst, latest } = await ranTwoHours();
			expect(afterFirst.seq).toBeGreaterThan(0);
			expect(latest.seq).toBeGreaterThan(afterFirst.seq!);
		});

		it('continues from the state this process wrote when the stored one is older, and records the rollback', async () => {
			const { clock, engineWith, afterFirst, latest, stored, started } = await ranTwoHours();
			clock.jumpTo(T0 + 2 * HOUR_MS + 10 * MINUTE_MS);
			// Without the remembered state, the stale cursor replans 02:00: recorded missed under Skip.
			const report = await engineWith({ storedState: afterFirst, remembered: latest }).activate();
			expect(report.notice).toContain('went back');
			expect(report.missedCount).toBe(0);
			expect(stored().lastDeclaredFire).toBe(T0 + 2 * HOUR_MS);
			expect(stored().history.map((r) => [r.outcome, r.declaredAt])).toEqual([
				['fired', T0 + HOUR_MS],
				['fired', T0 + 2 * HOUR_MS],
			]);
			expect(stored().rollbacks).toEqual([
				{
					detectedAt: T0 + 2 * HOUR_MS + 10 * MINUTE_MS,
					storedSeq: afterFirst.seq,
					seq: latest.seq,
					storedLastDeclaredFire: T0 + HOUR_MS,
				},
			]);
			expect(stored().seq).toBeGreaterThan(latest.seq!);
			expect(started.map((f) => f.declaredAt)).toEqual([T0 + HOUR_MS, T0 + 2 * HOUR_MS]);
		});

		it('without the remembered state (another process, or after a restart) the stale cursor replans the windows', async () => {
			const { clock, engineWith, afterFirst, stored } = await ranTwoHours();
			clock.jumpTo(T0 + 2 * HOUR_MS + 10 * MINUTE_MS);
			const report = await engineWith({ storedState: afterFirst }).activate();
			expect(report.notice).toBeUndefined();
			expect(report.missedCount).toBe(1);
			expect(stored().history.at(-1)).toMatchObject({
				outcome: 'missed',
				declaredAt: T0 + 2 * HOUR_MS,
			});
		});

		it('uses the stored state when it is as new or newer, when there is none (removed on purpose), or when the remembered one is of another schedule', async () => {
			const { clock, engineWith, afterFirst, latest, stored } = await ranTwoHours();
			clock.jumpTo(T0 + 2 * HOUR_MS + 10 * MINUTE_MS);
			expect(
				(await engineWith({ storedState: latest, remembered: afterFirst }).activate()).notice,
			).toBeUndefined();
			expect(stored().rollbacks).toBeUndefined();
			// A removed state is a reset, not a rollback.
			expect(
				(await engineWith({ storedState: undefined, remembered: latest }).activate()).notice,
			).toBeUndefined();
			expect(stored().lastDeclaredFire).toBe(T0 + 2 * HOUR_MS + 10 * MINUTE_MS);
			const otherSchedule = { ...latest, scheduleFingerprint: 'interval 1' };
			const report = await engineWith({
				storedState: afterFirst,
				remembered: otherSchedule,
			}).activate();
			expect(report.notice).toBeUndefined();
			expect(stored().rollbacks).toBeUndefined();
		});
	});

	it('reports write failures from timer-driven work to onError and keeps the schedule going', async () => {
		const { clock, engineWith, errors, started } = setup();
		let failing = false;
		const engine = engineWith({
			write: () => {
				if (failing) throw new Error('disk full');
			},
		});
		await engine.activate();
		failing = true;
		await clock.advance(HOUR_MS);
		expect(errors.map((error) => error.message)).toEqual(['disk full']);
		expect(started).toHaveLength(0); // not written, so not emitted
		failing = false;
		await clock.advance(HOUR_MS);
		expect(started.map((fire) => fire.declaredAt)).toEqual([T0 + 2 * HOUR_MS]);
	});

	it('starts no queued fire once deactivated, even when a run ends', async () => {
		const { clock, engineWith, started, stored } = setup();
		const engine = engineWith({ overlap: { kind: 'queue', queueLimit: 5 } });
		await engine.activate();
		await clock.advance(2 * HOUR_MS); // 01:00 runs, 02:00 queued
		engine.deactivate();
		await engine.fireEnded(started[0].runKey);
		expect(started).toHaveLength(1);
		expect(stored().queued.map((fire) => fire.declaredAt)).toEqual([T0 + 2 * HOUR_MS]);
	});

	it('stops firing when deactivated', async () => {
		const { clock, engineWith, started } = setup();
		const engine = engineWith();
		await engine.activate();
		engine.deactivate();
		await clock.advance(5 * HOUR_MS);
		expect(started).toEqual([]);
		expect(clock.pendingTimers()).toBe(0);
	});

	it('previews the next fires, history and pending catch-up without changing anything', async () => {
		const { clock, engineWith, persisted } = setup();
		await engineWith().activate();
		await clock.advance(HOUR_MS);
		const before = persisted.length;
		clock.jumpTo(T0 + 5 * HOUR_MS + 30 * MINUTE_MS);
		const engine = engineWith({ catchUp: 'run-all', runAllLimit: 2, jitterMs: MINUTE_MS });
		const preview = engine.preview(clock.now(), 3);
		expect(preview.nextFires.map((fire) => fire.declaredAt)).toEqual(
			[6, 7, 8].map((n) => T0 + n * HOUR_MS),
		);
		expect(preview.nextFires[0].fireAt).toBe(
			T0 + 6 * HOUR_MS + jitterFor(runKey('s', T0 + 6 * HOUR_MS), MINUTE_MS),
		);
		expect(preview.history.map((record) => record.outcome)).toEqual(['fired']);
		expect(preview.catchUp).toEqual({ missedCount: 4, runsToStart: 2 });
		expect(previewItem(preview)).toEqual({
			nextFires: [6, 7, 8].map((n) => ({
				runKey: runKey('s', T0 + n * HOUR_MS),
				declaredAt: iso(T0 + n * HOUR_MS),
				fireAt: iso(T0 + n * HOUR_MS + jitterFor(runKey('s', T0 + n * HOUR_MS), MINUTE_MS)),
			})),
			lastDeclaredFire: iso(T0 + HOUR_MS),
			catchUp: { missedCount: 4, runsToStart: 2 },
			summary: {
				windows: expect.objectContaining({ fired: 1, missed: 0 }),
				lastStartedAt: iso(T0 + HOUR_MS),
				maxLatenessMs: 0,
			},
			history: [
				{
					runKey: runKey('s', T0 + HOUR_MS),
					outcome: 'fired',
					declaredAt: iso(T0 + HOUR_MS),
					actualAt: iso(T0 + HOUR_MS),
					latenessMs: 0,
				},
			],
		});
		expect(persisted).toHaveLength(before);
		expect(clock.pendingTimers()).toBe(1); // only the first engine's timer
	});

	it('round-trips its state through JSON across restarts', async () => {
		const { clock, engineWith, stored, persisted } = setup();
		const engine = engineWith({ overlap: { kind: 'queue', queueLimit: 3 } });
		await engine.activate();
		await clock.advance(3 * HOUR_MS);
		expect(stored()).toEqual(persisted.at(-1));
		expect(stored()).toMatchObject({
			v: 1,
			scheduleFingerprint: hourly.fingerprint,
			lastDeclaredFire: T0 + 3 * HOUR_MS,
		});
		expect(stored().queued.map((fire) => fire.declaredAt)).toEqual([
			T0 + 2 * HOUR_MS,
			T0 + 3 * HOUR_MS,
		]);
		const historyBefore = stored().history;

		const restarted = engineWith({ overlap: { kind: 'queue', queueLimit: 3 } });
		expect(restarted.preview(clock.now(), 1).lastDeclaredFire).toBe(T0 + 3 * HOUR_MS);
		expect(await restarted.activate()).toMatchObject({ settling: 1 });
		await restarted.fireEnded(runKey('s', T0 + HOUR_MS)); // n8n settles the re-emitted 01:00 run
		expect(stored().history.slice(0, historyBefore.length)).toEqual(historyBefore);
		expect(stored().history.at(-1)).toMatchObject({
			outcome: 'fired',
			declaredAt: T0 + 2 * HOUR_MS,
		});
		expect(stored().queued.map((fire) => fire.declaredAt)).toEqual([T0 + 3 * HOUR_MS]);
	});

	it.each([
		[{ scheduleId: '' }, 'scheduleId'],
		[{ jitterMs: -1 }, 'jitter'],
		[{ jitterMs: 2 * DAY_MS }, 'jitter'],
		[{ catchUp: 'always' as never }, 'catchUp'],
		[{ runAllLimit: 0 }, 'runAllLimit'],
		[{ overlap: { kind: 'queue', queueLimit: -1 } as const }, 'queueLimit'],
	])('rejects invalid options %j naming %s', (options, field) => {
		expect(() => setup().engineWith(options)).toThrow(expect.objectContaining({ field }));
	});
});
