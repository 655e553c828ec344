/**
 * Catch-up planning after a year down, on minutely windows (525,600 missed), per catch-up policy:
 * time to plan with the core's planner, side by side with the baseline a hand-rolled scheduler uses
 * (walk `nextAfter` from the cursor and collect every missed window in an array), measured here.
 *   npx tsx bench/schedulePlanning.bench.ts        (BENCH_REPEATS=3 to shorten)
 */
import { performance } from 'node:perf_hooks';

import {
	type CatchUpPolicy,
	CATCH_UP_POLICIES,
	createSchedule,
	planCatchUp,
	type Schedule,
} from '../core/schedule';
import { DAY_MS } from '../core/units';

const REPEATS = Number(process.env.BENCH_REPEATS ?? 5);
const NOW = Date.UTC(2026, 0, 1);
const LAST_FIRE = NOW - 365 * DAY_MS;
const SCHEDULES: Array<[string, Schedule]> = [
	[
		'cron "* * * * *" (Europe/Berlin)',
		createSchedule({ kind: 'cron', expression: '* * * * *', timezone: 'Europe/Berlin' }),
	],
	['interval 60 s', createSchedule({ kind: 'interval', intervalMs: 60_000 })],
];

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)];
}

function timed<T>(fn: () => T): { ms: number; result: T } {
	const times: number[] = [];
	let result!: T;
	for (let r = 0; r < REPEATS; r++) {
		const started = performance.now();
		result = fn();
		times.push(performance.now() - started);
	}
	return { ms: median(times), result };
}

/** The baseline: every missed window (declared before now), listed. */
function listAllMissed(schedule: Schedule): number[] {
	const windows: number[] = [];
	for (let w = schedule.nextAfter(LAST_FIRE); w < NOW; w = schedule.nextAfter(w)) windows.push(w);
	return windows;
}

const rows: string[][] = [
	['schedule', 'policy', 'missed', 'runs', 'plan ms', 'baseline ms', 'baseline / plan'],
];
for (const [label, schedule] of SCHEDULES) {
	const baseline = timed(() => listAllMissed(schedule));
	for (const policy of CATCH_UP_POLICIES as CatchUpPolicy[]) {
		const plan = timed(() =>
			planCatchUp({
				scheduleId: 'bench',
				schedule,
				lastDeclaredFire: LAST_FIRE,
				now: NOW,
				policy,
				runAllLimit: 10,
			}),
		);
		if (plan.result.missedCount !== baseline.result.length)
			throw new Error(
				`${label} ${policy}: planned ${plan.result.missedCount} missed, baseline ${baseline.result.length}`,
			);
		rows.push([
			label,
			policy,
			String(plan.result.missedCount),
			String(plan.result.starts.length),
			plan.ms.toFixed(2),
			baseline.ms.toFixed(2),
			`${(baseline.ms / plan.ms).toFixed(1)}x`,
		]);
	}
}

const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
process.stdout.write(`Catch-up planning, a year of minutely windows (median of ${REPEATS})\n`);
for (const row of rows)
	process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c])).join('  ')}\n`);
