import { checkedSilenceAfter, SilenceWatch } from './silence';

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;

describe('SilenceWatch', () => {
	it('reports once when nothing new came for that long, and once when something new comes again', () => {
		const watch = new SilenceWatch(2 * HOUR, undefined, T0);
		expect(watch.polled(false, T0 + HOUR)).toBeUndefined();
		expect(watch.polled(false, T0 + 2 * HOUR - 1)).toBeUndefined();
		expect(watch.polled(false, T0 + 2 * HOUR)).toEqual({
			kind: 'silent',
			message:
				'Nothing new from the source for 2h (since 2026-01-01T00:00:00.000Z); Alert When Nothing New For is 2h',
		});
		expect(watch.polled(false, T0 + 5 * HOUR)).toBeUndefined();
		expect(watch.polled(true, T0 + 6 * HOUR)).toEqual({
			kind: 'back',
			message:
				'The source lists new items again, after 6h without any (since 2026-01-01T00:00:00.000Z)',
		});
		expect(watch.saved()).toEqual({ lastNewAt: T0 + 6 * HOUR });
		// A new silence is counted from the last new item.
		expect(watch.polled(false, T0 + 8 * HOUR)?.kind).toBe('silent');
	});

	it('new items before the silence restart the count and report nothing', () => {
		const watch = new SilenceWatch(2 * HOUR, undefined, T0);
		expect(watch.polled(true, T0 + HOUR)).toBeUndefined();
		expect(watch.polled(false, T0 + 2 * HOUR)).toBeUndefined();
		expect(watch.polled(false, T0 + 3 * HOUR)?.kind).toBe('silent');
	});

	it('goes on from its saved form: a restart neither resets the silence nor reports it again', () => {
		const before = new SilenceWatch(2 * HOUR, undefined, T0);
		before.polled(false, T0 + 2 * HOUR);
		const saved = JSON.parse(JSON.stringify(before.saved()));
		expect(new SilenceWatch(2 * HOUR, saved, T0 + 3 * HOUR).polled(false, T0 + 3 * HOUR)).toBe(
			undefined,
		);
		const notYet = new SilenceWatch(2 * HOUR, { lastNewAt: T0 }, T0 + HOUR);
		expect(notYet.polled(false, T0 + 2 * HOUR)?.kind).toBe('silent');
	});

	it('refuses a duration under a minute or over 366 days, naming the option', () => {
		expect(() => checkedSilenceAfter(30_000)).toThrow(
			'Invalid value 0.5 for "«silenceAfterMin»": must be from 1 to 527040 minutes (366d)',
		);
		expect(() => checkedSilenceAfter(367 * 24 * HOUR)).toThrow(
			'Invalid value 528480 for "«silenceAfterMin»": must be from 1 to 527040 minutes (366d)',
		);
		expect(checkedSilenceAfter(HOUR)).toBe(HOUR);
	});
});
