import type { FireRecord, ScheduleState } from './history';
import {
	appendHistory,
	freshState,
	HISTORY_LIMIT,
	loadScheduleState,
	recordItem,
	summarizeHistory,
} from './history';

const entry = (n: number, outcome: FireRecord['outcome'] = 'fired'): FireRecord => ({
	runKey: `r${n}`,
	declaredAt: n,
	outcome,
});

describe('history', () => {
	it('keeps the newest entries, newest last', () => {
		let history: FireRecord[] = [];
		for (let n = 0; n < 250; n++) history = appendHistory(history, [entry(n)]);
		expect(history).toHaveLength(HISTORY_LIMIT);
		expect(history[0].declaredAt).toBe(150);
		expect(history.at(-1)?.declaredAt).toBe(249);
		expect(appendHistory(history, [entry(1), entry(2)], 3).map((e) => e.declaredAt)).toEqual([
			249, 1, 2,
		]);
	});

	it('summarizes windows per outcome, counting summary entries in full', () => {
		const summary = summarizeHistory([
			{ ...entry(1), actualAt: 5, latenessMs: 4 },
			{ ...entry(2), actualAt: 9, latenessMs: 7 },
			{ ...entry(3, 'missed'), count: 1000, firstDeclaredAt: 0 },
			entry(4, 'skipped'),
		]);
		expect(summary).toEqual({
			windows: {
				fired: 2,
				skipped: 1,
				queued: 0,
				missed: 1000,
				caught_up: 0,
				coalesced: 0,
				released: 0,
				retried: 0,
				failed: 0,
				recovered: 0,
			},
			lastStartedAt: 9,
			maxLatenessMs: 7,
		});
	});
});

describe('recordItem', () => {
	it('shows times as ISO strings and keeps the rest', () => {
		const declaredAt = Date.UTC(2026, 0, 1, 9);
		expect(
			recordItem({
				runKey: 'k',
				declaredAt,
				outcome: 'missed',
				reason: 'down',
				count: 3,
				firstDeclaredAt: declaredAt - 120_000,
			}),
		).toEqual({
			runKey: 'k',
			declaredAt: '2026-01-01T09:00:00.000Z',
			outcome: 'missed',
			reason: 'down',
			count: 3,
			firstDeclaredAt: '2026-01-01T08:58:00.000Z',
		});
		expect(
			recordItem({
				runKey: 'k',
				declaredAt,
				actualAt: declaredAt + 250,
				latenessMs: 250,
				outcome: 'fired',
			}),
		).toEqual({
			runKey: 'k',
			declaredAt: '2026-01-01T09:00:00.000Z',
			actualAt: '2026-01-01T09:00:00.250Z',
			latenessMs: 250,
			outcome: 'fired',
		});
	});
});

describe('loadScheduleState', () => {
	const stored: ScheduleState = {
		v: 1,
		scheduleFingerprint: 'fp',
		lastDeclaredFire: 1234,
		queued: [{ runKey: 'q', declaredAt: 1000, kind: 'scheduled' }],
		outbox: [
			{
				key: 'r1',
				run: {
					runKey: 'r1',
					declaredAt: 1,
					kind: 'scheduled',
					actualAt: 1,
					latenessMs: 0,
					reprocessing: false,
				},
			},
		],
		history: [entry(1)],
	};

	it('round-trips through JSON', () => {
		const loaded = loadScheduleState(JSON.parse(JSON.stringify(stored)), 'fp');
		expect(loaded).toEqual({ state: stored });
		expect(loaded.state).not.toBe(stored);
	});

	it('starts fresh quietly when nothing is stored', () => {
		expect(loadScheduleState(undefined, 'fp')).toEqual({ state: freshState('fp') });
	});

	it('starts fresh and says so for an unknown version', () => {
		const loaded = loadScheduleState({ ...stored, v: 2 }, 'fp');
		expect(loaded.state).toEqual(freshState('fp'));
		expect(loaded.reset).toBe('unknown-version');
		expect(loaded.notice).toContain('unknown version 2');
		expect(loadScheduleState('garbage', 'fp').reset).toBe('unknown-version');
	});

	it.each([
		{ ...stored, lastDeclaredFire: 'yesterday' },
		{ ...stored, history: [{ runKey: 'x', declaredAt: 1, outcome: 'exploded' }] },
		{
			...stored,
			queued: [{ runKey: 'x', declaredAt: 1, kind: 'coalesced', coalesced: { count: 'many' } }],
		},
		{ ...stored, queued: undefined },
	])('starts fresh and says so for malformed state %#', (malformed) => {
		const loaded = loadScheduleState(malformed, 'fp');
		expect(loaded.state).toEqual(freshState('fp'));
		expect(loaded.reset).toBe('invalid');
	});

	it('keeps history and the runs still to settle, but drops progress, when the schedule changed', () => {
		const loaded = loadScheduleState(stored, 'new-fp');
		expect(loaded.reset).toBe('schedule-changed');
		expect(loaded.notice).toContain('"fp" to "new-fp"');
		expect(loaded.state).toEqual({
			v: 1,
			scheduleFingerprint: 'new-fp',
			queued: [],
			outbox: stored.outbox,
			history: stored.history,
		});
	});
});
