import { IANAZone } from 'luxon';

import { ConfigError } from '../configError';
import { MIN_INTERVAL_MS } from './interval';
import type { Schedule, WindowSpan } from './types';
import { DAY_MS, isoTime, SECOND_MS } from '../units';

/*
 * Cron expressions planned in an IANA time zone.
 *
 * Syntax: 5 fields `minute hour day-of-month month day-of-week`, or 6 with a leading `second`.
 * Each field is `*` or a comma list of values, ranges `a-b` and steps (`*\/5`, `1-10/2`, `5/15`
 * meaning 5 to the field's maximum). Months accept JAN-DEC and weekdays SUN-SAT; weekday 7 is
 * Sunday. Macros: @hourly @daily (@midnight) @weekly @monthly @yearly (@annually).
 *
 * Day matching follows Vixie cron: when day-of-month and day-of-week are both restricted (neither
 * field starts with `*`), a day matches if EITHER matches (`0 0 1 * MON` = the 1st and every
 * Monday); otherwise both must match.
 *
 * Daylight-saving time, as cron users expect it:
 * - Spring forward (a span of local times does not exist): a job whose hour field is fixed runs
 *   once at the first instant after the gap (`30 2 * * *` on a 02:00→03:00 night runs at 03:00);
 *   a job whose hour field matches every hour (`*\/15 * * * *`) has no fires in the missing span.
 * - Fall back (a span of local times happens twice): a fixed-hour job fires once, in the first
 *   occurrence; an every-hour job fires in both occurrences (it runs "every 15 minutes" of real
 *   time through the repeated hour).
 * "Matches every hour" means the hour field allows all 24 hours (`*`, `*\/1`, `0-23`); `*\/2` is
 * a fixed-hour job.
 *
 * Minimum gap: like an interval, two consecutive fires must be at least MIN_CRON_GAP_MS (10 s)
 * apart, over the whole calendar (`*\/5 * * * * *`, `0-30 * * * * *` and `0,55 0,59 0,1 * * *` are
 * refused) and across the zone's DST changes from 2000 to 2100 in real time (a fixed-hour fire moved
 * to the end of a spring-forward gap must not land within 10 s of its neighbours).
 */

/** The shortest time between two consecutive fires, the same floor as an interval schedule's. */
export const MIN_CRON_GAP_MS = MIN_INTERVAL_MS;
/** DST changes checked against the minimum gap: [2000, 2100), probed weekly (no real zone changes twice in a week). */
const DST_CHECK_FROM = Date.UTC(2000, 0, 1);
const DST_CHECK_TO = Date.UTC(2100, 0, 1);
const DST_PROBE_MS = 7 * DAY_MS;

interface FieldSpec {
	name: string;
	min: number;
	max: number;
	/** Names for the values min, min+1, ... (JAN = 1, SUN = 0). */
	names?: readonly string[];
}

const SECOND: FieldSpec = { name: 'second', min: 0, max: 59 };
const MINUTE: FieldSpec = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldSpec = { name: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldSpec = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldSpec = {
	name: 'month',
	min: 1,
	max: 12,
	names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
};
const DAY_OF_WEEK: FieldSpec = {
	name: 'day-of-week',
	min: 0,
	max: 7,
	names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
};

/** The macros both this planner and croner accept, as the five-field expressions they stand for. */
export const MACROS: Readonly<Record<string, string>> = {
	'@yearly': '0 0 1 1 *',
	'@annually': '0 0 1 1 *',
	'@monthly': '0 0 1 * *',
	'@weekly': '0 0 * * 0',
	'@daily': '0 0 * * *',
	'@midnight': '0 0 * * *',
	'@hourly': '0 * * * *',
};

/** The Gregorian calendar repeats every 400 years, so a date pattern absent from one cycle never occurs. */
const GREGORIAN_CYCLE_DAYS = 146_097;

/** Parsed fields; `allowed[v]` says whether value v matches. Weekday 7 is folded into 0. */
export interface CronFields {
	seconds: boolean[];
	minutes: boolean[];
	hours: boolean[];
	daysOfMonth: boolean[];
	months: boolean[];
	daysOfWeek: boolean[];
	/** 'or' when day-of-month and day-of-week are both restricted (Vixie rule), else 'and'. */
	dayRule: 'and' | 'or';
}

/** Parses a cron expression, throwing a ConfigError (field `cron`) that says what is wrong. */
export function parseCron(expression: string): CronFields {
	const fail = (problem: string) => cronError(expression, problem);
	if (typeof expression !== 'string' || expression.trim() === '') throw fail('it is empty');
	const trimmed = expression.trim();
	const text = trimmed.startsWith('@') ? MACROS[trimmed.toLowerCase()] : trimmed;
	if (text === undefined) throw fail(`unknown macro; use one of ${Object.keys(MACROS).join(' ')}`);
	const parts = text.split(/\s+/);
	if (parts.length !== 5 && parts.length !== 6) {
		throw fail(
			`expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with leading seconds), got ${parts.length}`,
		);
	}
	const [second, minute, hour, dayOfMonth, month, dayOfWeek] =
		parts.length === 6 ? parts : ['0', ...parts];
	const daysOfWeek = parseField(dayOfWeek, DAY_OF_WEEK, fail);
	daysOfWeek[0] ||= daysOfWeek[7];
	daysOfWeek[7] = false;
	return {
		seconds: parseField(second, SECOND, fail),
		minutes: parseField(minute, MINUTE, fail),
		hours: parseField(hour, HOUR, fail),
		daysOfMonth: parseField(dayOfMonth, DAY_OF_MONTH, fail),
		months: parseField(month, MONTH, fail),
		daysOfWeek,
		dayRule: dayOfMonth.startsWith('*') || dayOfWeek.startsWith('*') ? 'and' : 'or',
	};
}

function parseField(
	text: string,
	spec: FieldSpec,
	fail: (problem: string) => ConfigError,
): boolean[] {
	const allowed = new Array<boolean>(spec.max + 1).fill(false);
	for (const item of text.split(',')) {
		const [rangeText, stepText, extra] = item.split('/');
		if (extra !== undefined) throw fail(`${spec.name} "${item}" has more than one "/"`);
		const step = stepText === undefined ? 1 : Number(stepText);
		if (stepText !== undefined && (!/^\d+$/.test(stepText) || step < 1)) {
			throw fail(`${spec.name} step "${stepText}" must be a whole number of at least 1`);
		}
		let from: number;
		let to: number;
		if (rangeText === '*') {
			[from, to] = [spec.min, spec.max];
		} else if (rangeText.includes('-')) {
			const [fromText, toText, rest] = rangeText.split('-');
			if (rest !== undefined) throw fail(`${spec.name} range "${rangeText}" has more than one "-"`);
			[from, to] = [parseValue(fromText, spec, fail), parseValue(toText, spec, fail)];
			if (from > to) throw fail(`${spec.name} range ${rangeText} is reversed`);
		} else {
			from = parseValue(rangeText, spec, fail);
			// `5/15` means every 15th value starting at 5.
			to = stepText === undefined ? from : spec.max;
		}
		for (let value = from; value <= to; value += step) allowed[value] = true;
	}
	return allowed;
}

function parseValue(text: string, spec: FieldSpec, fail: (problem: string) => ConfigError): number {
	if (/^\d+$/.test(text)) {
		const value = Number(text);
		if (value < spec.min || value > spec.max)
			throw fail(`${spec.name} ${value} is out of range ${spec.min}-${spec.max}`);
		return value;
	}
	const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
	if (index < 0) {
		const expected = spec.names
			? `a number or a name (${spec.names[0]}-${spec.names[spec.names.length - 1]})`
			: 'a number';
		throw fail(`${spec.name} "${text}" is not ${expected}`);
	}
	return spec.min + index;
}

function cronError(expression: unknown, problem: string): ConfigError {
	return new ConfigError('cron', expression, problem);
}

/** Resolves an IANA zone name, throwing a ConfigError (field `timezone`) for one luxon does not know. */
export function resolveZone(timezone: string): IANAZone {
	if (typeof timezone !== 'string' || !IANAZone.isValidZone(timezone)) {
		throw new ConfigError(
			'timezone',
			timezone,
			'not a known IANA time zone (e.g. "Europe/Berlin")',
		);
	}
	return IANAZone.create(timezone);
}

/** A span of one local day's wall-clock times (ms, wall time written as if UTC) and how they map to instants. */
type DayPiece =
	| { fromWall: number; toWall: number; offsetMs: number }
	/** Wall times skipped by a spring-forward; fixed-hour fires there run at `gapEnd`. */
	| { fromWall: number; toWall: number; gapEnd: number };

export class CronSchedule implements Schedule {
	readonly fingerprint: string;
	private readonly fields: CronFields;
	private readonly zone: IANAZone;
	private readonly hourMatchesAll: boolean;
	// `next*[v]` = the smallest allowed value ≥ v, or -1; the extra last slot is the -1 sentinel.
	private readonly nextHour: number[];
	private readonly nextMinute: number[];
	private readonly nextSecond: number[];

	constructor(
		readonly expression: string,
		readonly timezone: string,
	) {
		this.fields = parseCron(expression);
		this.zone = resolveZone(timezone);
		this.hourMatchesAll = this.fields.hours.every(Boolean);
		this.nextHour = nextAllowedTable(this.fields.hours);
		this.nextMinute = nextAllowedTable(this.fields.minutes);
		this.nextSecond = nextAllowedTable(this.fields.seconds);
		// Fails now, as a config error, rather than at the first planning call.
		this.firstMatchingDay(0);
		const tooClose = this.wallClockGapProblem() ?? this.dstGapProblem();
		if (tooClose)
			throw cronError(
				expression,
				`${tooClose}; fires must be at least ${MIN_CRON_GAP_MS / SECOND_MS} seconds apart (e.g. "*/10 * * * * *")`,
			);
		const f = this.fields;
		this.fingerprint = [
			'cron',
			renderAllowed(f.seconds, SECOND),
			renderAllowed(f.minutes, MINUTE),
			renderAllowed(f.hours, HOUR),
			renderAllowed(f.daysOfMonth, DAY_OF_MONTH),
			renderAllowed(f.months, MONTH),
			renderAllowed(f.daysOfWeek.slice(0, 7), { ...DAY_OF_WEEK, max: 6 }),
			`days:${f.dayRule}`,
			timezone,
		].join(' ');
	}

	nextAfter(afterMs: number): number {
		// The generator is infinite: the constructor proved the expression matches some date.
		return this.firesAfter(afterMs).next().value as number;
	}

	windowsBetween(fromExclusive: number, toInclusive: number, limit: number): WindowSpan {
		let count = 0;
		let first: number | undefined;
		let last: number | undefined;
		// A ring of the newest `limit` windows, so a year of minutely windows is never held in memory.
		const ring: number[] = [];
		for (const fire of this.firesAfter(fromExclusive)) {
			if (fire > toInclusive) break;
			first ??= fire;
			last = fire;
			if (limit > 0) ring[count % limit] = fire;
			count++;
		}
		const split = count > limit && limit > 0 ? count % limit : 0;
		return { count, first, last, newest: [...ring.slice(split), ...ring.slice(0, split)] };
	}

	/** Fire instants strictly after `afterMs`, ascending, without end. */
	*firesAfter(afterMs: number): Generator<number, never> {
		let floor = afterMs;
		let day = Math.floor((afterMs + this.offsetMs(afterMs)) / DAY_MS);
		for (;;) {
			day = this.firstMatchingDay(day);
			const dayStart = day * DAY_MS;
			for (const piece of this.piecesOf(dayStart)) {
				const endSecond = (piece.toWall - dayStart) / SECOND_MS;
				if ('gapEnd' in piece) {
					const inGap = this.nextTimeOfDay(Math.ceil((piece.fromWall - dayStart) / SECOND_MS));
					if (piece.gapEnd > floor && inGap >= 0 && inGap < endSecond) yield (floor = piece.gapEnd);
					continue;
				}
				const fromWall = Math.max(piece.fromWall, floor + piece.offsetMs + 1);
				for (
					let second = Math.ceil((fromWall - dayStart) / SECOND_MS);
					second < endSecond;
					second++
				) {
					second = this.nextTimeOfDay(second);
					if (second < 0 || second >= endSecond) break;
					yield (floor = dayStart + second * SECOND_MS - piece.offsetMs);
				}
			}
			day++;
		}
	}

	/** Smallest matching second of the day ≥ `fromSecond` (0..86399), or -1. Skips whole hours and minutes. */
	private nextTimeOfDay(fromSecond: number): number {
		let hour = Math.floor(fromSecond / 3600);
		let minute = Math.floor((fromSecond % 3600) / 60);
		let second = fromSecond % 60;
		for (;;) {
			const nextHour = this.nextHour[hour];
			if (nextHour < 0) return -1;
			if (nextHour !== hour) [hour, minute, second] = [nextHour, 0, 0];
			const nextMinute = this.nextMinute[minute];
			if (nextMinute < 0) {
				[hour, minute, second] = [hour + 1, 0, 0];
				continue;
			}
			if (nextMinute !== minute) [minute, second] = [nextMinute, 0];
			const nextSecond = this.nextSecond[second];
			if (nextSecond < 0) {
				[minute, second] = [minute + 1, 0];
				continue;
			}
			return hour * 3600 + minute * 60 + nextSecond;
		}
	}

	/** The first day number (days since 1970-01-01) ≥ `fromDay` whose date matches; skips whole months. */
	private firstMatchingDay(fromDay: number): number {
		const { months } = this.fields;
		for (let day = fromDay; day < fromDay + GREGORIAN_CYCLE_DAYS; ) {
			const date = new Date(day * DAY_MS);
			const month = date.getUTCMonth() + 1;
			if (!months[month]) {
				day = Date.UTC(date.getUTCFullYear(), month, 1) / DAY_MS;
				continue;
			}
			if (this.dayMatches(day)) return day;
			day++;
		}
		throw cronError(
			this.expression,
			'it never fires: no date matches its day-of-month, month and day-of-week',
		);
	}

	private dayMatches(day: number): boolean {
		const { months, daysOfMonth, daysOfWeek, dayRule } = this.fields;
		const date = new Date(day * DAY_MS);
		if (!months[date.getUTCMonth() + 1]) return false;
		const domMatches = daysOfMonth[date.getUTCDate()];
		const dowMatches = daysOfWeek[date.getUTCDay()];
		return dayRule === 'or' ? domMatches || dowMatches : domMatches && dowMatches;
	}

	/**
	 * Two fires closer than the minimum on the wall clock (DST aside), described, or undefined.
	 * Consecutive fires are seconds of one minute, or the last second of a minute and the first
	 * of the next fire minute; only the wrap into the very next minute can be shorter than a minute,
	 * so it matters only when two consecutive minutes fire somewhere in the calendar.
	 */
	private wallClockGapProblem(): string | undefined {
		const seconds = allowedValues(this.fields.seconds);
		const minGapSeconds = MIN_CRON_GAP_MS / SECOND_MS;
		const hour = allowedValues(this.fields.hours)[0];
		const minute = allowedValues(this.fields.minutes)[0];
		for (let i = 1; i < seconds.length; i++) {
			if (seconds[i] - seconds[i - 1] < minGapSeconds) {
				return `it fires ${secondsText(seconds[i] - seconds[i - 1])} apart (at ${clock(hour, minute, seconds[i - 1])} and ${clock(hour, minute, seconds[i])})`;
			}
		}
		const [first, last] = [seconds[0], seconds[seconds.length - 1]];
		const wrap = 60 - last + first;
		if (wrap >= minGapSeconds) return undefined;
		const pair = this.consecutiveFireMinutes();
		if (!pair) return undefined;
		return `it fires ${secondsText(wrap)} apart (at ${clock(pair[0][0], pair[0][1], last)} and ${clock(pair[1][0], pair[1][1], first)}${pair[2] ? ' the next day' : ''})`;
	}

	/** Two fire minutes one minute apart, as [[hour, minute], [hour, minute], next day?], or undefined. */
	private consecutiveFireMinutes(): [[number, number], [number, number], boolean] | undefined {
		const { minutes, hours } = this.fields;
		const hour = allowedValues(hours)[0];
		for (let m = 0; m < 59; m++)
			if (minutes[m] && minutes[m + 1]) return [[hour, m], [hour, m + 1], false];
		if (!minutes[59] || !minutes[0]) return undefined;
		for (let h = 0; h < 23; h++) if (hours[h] && hours[h + 1]) return [[h, 59], [h + 1, 0], false];
		if (!hours[23] || !hours[0]) return undefined;
		// 23:59 and 00:00 of the next day: do two consecutive days match (within one Gregorian cycle)?
		for (
			let day = this.firstMatchingDay(0);
			day < GREGORIAN_CYCLE_DAYS;
			day = this.firstMatchingDay(day + 1)
		) {
			if (this.dayMatches(day + 1)) return [[23, 59], [0, 0], true];
		}
		return undefined;
	}

	/**
	 * Two fires closer than the minimum in real time around one of the zone's offset changes, or
	 * undefined. A spring-forward gap moves a fixed-hour fire to the gap's end, and a half-hour change
	 * joins wall times that are far apart on the clock; both can bring fires together. Only fires
	 * within the minimum of a change can be affected, so those are the ones listed.
	 */
	private dstGapProblem(): string | undefined {
		// Whole-minute fires in a zone with whole-minute offsets are whole minutes apart.
		if (allowedValues(this.fields.seconds).join() === '0') return undefined;
		// What the planner does around a change depends only on the wall times left and entered and on
		// which of the days involved match; changes alike in those are planned once.
		const planned = new Set<string>();
		for (const { at: change, wallLeft, wallEntered } of offsetChanges(this.zone)) {
			if (!this.firesNear(wallLeft, wallEntered)) continue;
			const firstDay = Math.floor((Math.min(wallLeft, wallEntered) - MIN_CRON_GAP_MS) / DAY_MS);
			const lastDay = Math.floor((Math.max(wallLeft, wallEntered) + MIN_CRON_GAP_MS) / DAY_MS);
			const shape = [wallLeft - firstDay * DAY_MS, wallEntered - firstDay * DAY_MS];
			for (let day = firstDay; day <= lastDay; day++) shape.push(this.dayMatches(day) ? 1 : 0);
			const key = shape.join();
			if (planned.has(key)) continue;
			planned.add(key);
			let previous: number | undefined;
			for (const fire of this.firesAfter(change - MIN_CRON_GAP_MS - SECOND_MS)) {
				if (fire > change + MIN_CRON_GAP_MS + SECOND_MS) break;
				if (previous !== undefined && fire - previous < MIN_CRON_GAP_MS) {
					return `it fires ${secondsText((fire - previous) / SECOND_MS)} apart when the clocks change in ${this.timezone} (for example at ${isoTime(previous)} and ${isoTime(fire)})`;
				}
				previous = fire;
			}
		}
		return undefined;
	}

	/**
	 * Whether the expression fires, on the wall clock, within the minimum before the local time the
	 * clocks leave at an offset change or after the one they enter. Two fires closer than the minimum across
	 * the change need one of those (a fire moved to the end of a spring-forward gap included: its
	 * neighbour is one of them), so other changes need no planning.
	 */
	private firesNear(wallLeft: number, wallEntered: number): boolean {
		for (let k = 1; k <= MIN_CRON_GAP_MS / SECOND_MS; k++) {
			if (
				this.firesAtWall(wallLeft - k * SECOND_MS) ||
				this.firesAtWall(wallEntered + (k - 1) * SECOND_MS)
			)
				return true;
		}
		return false;
	}

	/** Whether the expression matches a wall time (ms, written as if UTC, whole seconds). */
	private firesAtWall(wall: number): boolean {
		const day = Math.floor(wall / DAY_MS);
		const second = Math.floor((wall - day * DAY_MS) / SECOND_MS);
		const { hours, minutes, seconds } = this.fields;
		return (
			hours[Math.floor(second / 3600)] &&
			minutes[Math.floor((second % 3600) / 60)] &&
			seconds[second % 60] &&
			this.dayMatches(day)
		);
	}

	/**
	 * Splits one local day into spans with a fixed wall→instant mapping. Assumes the zone changes
	 * offset at most once within three days around the day (true of every real zone).
	 */
	private piecesOf(dayStart: number): DayPiece[] {
		const dayEnd = dayStart + DAY_MS;
		// Instants of this day's wall times lie within ±14h of it, so these probes bracket them.
		const probeFrom = dayStart - DAY_MS;
		const probeTo = dayStart + 2 * DAY_MS;
		const before = this.offsetMs(probeFrom);
		const after = this.offsetMs(probeTo);
		if (before === after) return [{ fromWall: dayStart, toWall: dayEnd, offsetMs: before }];
		const transition = this.firstInstantWithOffsetOtherThan(before, probeFrom, probeTo);
		const wallLeft = transition + before; // the old clock's reading at the change (exclusive end)
		const wallEntered = transition + after; // the new clock's reading at the change
		const pieces: DayPiece[] = [
			{ fromWall: dayStart, toWall: Math.min(dayEnd, wallLeft), offsetMs: before },
		];
		if (after > before) {
			if (!this.hourMatchesAll) {
				pieces.push({
					fromWall: Math.max(dayStart, wallLeft),
					toWall: Math.min(dayEnd, wallEntered),
					gapEnd: transition,
				});
			}
			pieces.push({ fromWall: Math.max(dayStart, wallEntered), toWall: dayEnd, offsetMs: after });
		} else {
			// Repeated wall times [wallEntered, wallLeft): fixed-hour jobs already fired there on the old offset.
			const resumeAt = this.hourMatchesAll ? wallEntered : wallLeft;
			pieces.push({ fromWall: Math.max(dayStart, resumeAt), toWall: dayEnd, offsetMs: after });
		}
		return pieces.filter((piece) => piece.fromWall < piece.toWall);
	}

	/** Binary search in (lo, hi] for the first instant whose offset differs from `offset` (the value at `lo`). */
	private firstInstantWithOffsetOtherThan(offset: number, lo: number, hi: number): number {
		while (hi - lo > 1) {
			const mid = Math.floor((lo + hi) / 2);
			if (this.offsetMs(mid) === offset) lo = mid;
			else hi = mid;
		}
		return hi;
	}

	private offsetMs(instant: number): number {
		return this.zone.offset(instant) * 60_000;
	}
}

/** The next fire of `expression` in `timezone` strictly after `afterMs`. */
export function nextFireAfter(expression: string, afterMs: number, timezone: string): number {
	return new CronSchedule(expression, timezone).nextAfter(afterMs);
}

/** An instant the zone's UTC offset changes, with the wall times (ms, written as if UTC) the clocks leave and enter. */
interface OffsetChange {
	at: number;
	wallLeft: number;
	wallEntered: number;
}

/** The zone's offset changes in [DST_CHECK_FROM, DST_CHECK_TO), cached per zone. */
const offsetChangesByZone = new Map<string, OffsetChange[]>();
function offsetChanges(zone: IANAZone): OffsetChange[] {
	const cached = offsetChangesByZone.get(zone.name);
	if (cached) return cached;
	const changes: OffsetChange[] = [];
	let offset = zone.offset(DST_CHECK_FROM);
	for (let probe = DST_CHECK_FROM; probe < DST_CHECK_TO; probe += DST_PROBE_MS) {
		const next = zone.offset(probe + DST_PROBE_MS);
		if (next === offset) continue;
		let [lo, hi] = [probe, probe + DST_PROBE_MS];
		while (hi - lo > 1) {
			const mid = Math.floor((lo + hi) / 2);
			if (zone.offset(mid) === offset) lo = mid;
			else hi = mid;
		}
		changes.push({
			at: hi,
			wallLeft: hi + offset * 60_000,
			wallEntered: hi + zone.offset(hi) * 60_000,
		});
		offset = next;
	}
	offsetChangesByZone.set(zone.name, changes);
	return changes;
}

function allowedValues(allowed: boolean[]): number[] {
	return allowed.flatMap((yes, value) => (yes ? [value] : []));
}

function secondsText(count: number): string {
	return count === 1 ? '1 second' : `${count} seconds`;
}

function clock(hour: number, minute: number, second: number): string {
	return [hour, minute, second].map((n) => String(n).padStart(2, '0')).join(':');
}

function nextAllowedTable(allowed: boolean[]): number[] {
	const table = new Array<number>(allowed.length + 1).fill(-1);
	for (let value = allowed.length - 1; value >= 0; value--)
		table[value] = allowed[value] ? value : table[value + 1];
	return table;
}

/** Renders allowed values as `*` or a list of runs (`0-4,9`), for the fingerprint. */
function renderAllowed(allowed: boolean[], spec: FieldSpec): string {
	const values: number[] = [];
	for (let value = spec.min; value <= spec.max; value++) if (allowed[value]) values.push(value);
	if (values.length === spec.max - spec.min + 1) return '*';
	const runs: string[] = [];
	for (let i = 0; i < values.length; ) {
		let end = i;
		while (end + 1 < values.length && values[end + 1] === values[end] + 1) end++;
		runs.push(end === i ? `${values[i]}` : `${values[i]}-${values[end]}`);
		i = end + 1;
	}
	return runs.join(',');
}
