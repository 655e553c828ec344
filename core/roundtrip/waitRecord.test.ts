import {
	callbackUrlFor,
	decodeWaitRecord,
	encodeWaitRecord,
	newWait,
	signNotice,
	verifyNotice,
} from './waitRecord';

const STARTED = Date.UTC(2026, 0, 1, 12);
const fixedRandom = (bytes: number) => Buffer.alloc(bytes, 7);

describe('wait record', () => {
	it('round-trips through the text kept with the waiting node, with its correlation id', () => {
		const record = newWait('c'.repeat(255), STARTED, STARTED + 366 * 86_400_000, true);
		expect(decodeWaitRecord(encodeWaitRecord(record))).toEqual(record);
	});

	it('reads a version-1 record (custom data, before the upgrade) with its correlation id from its own key', () => {
		const v1 = '{"v":1,"w":"w1","s":1,"d":2,"k":"key"}';
		expect(decodeWaitRecord(v1, 'order-7')).toEqual({
			waitId: 'w1',
			correlationId: 'order-7',
			startedAtMs: 1,
			deadlineMs: 2,
			noticeKey: 'key',
		});
		expect(decodeWaitRecord(v1)).toBeUndefined();
	});

	it('gives Send and Wait a fresh wait id and Wait Only none', () => {
		expect(newWait('c', STARTED, STARTED + 1000, true).waitId).toMatch(/^[A-Za-z0-9_-]{22}$/);
		expect(newWait('c', STARTED, STARTED + 1000, true).waitId).not.toBe(
			newWait('c', STARTED, STARTED + 1000, true).waitId,
		);
		expect(newWait('c', STARTED, STARTED + 1000, false).waitId).toBe('');
	});

	it.each([
		undefined,
		'',
		'not json',
		'{"v":3,"w":"","c":"c","s":1,"d":2,"k":"k"}',
		'{"v":2,"w":"","s":1,"d":2,"k":"k"}',
		'{"v":2,"w":"","c":"","s":1,"d":2,"k":"k"}',
		'{"v":2,"w":"","c":"c","s":"1","d":2,"k":"k"}',
		'{"v":2,"w":"","c":"c","s":1,"d":2,"k":""}',
	])('reads %p as no record', (text) => {
		expect(decodeWaitRecord(text)).toBeUndefined();
	});
});

describe('callbackUrlFor', () => {
	it("adds the wait id to n8n's resume URL, keeping its signature token", () => {
		expect(callbackUrlFor('http://localhost:5678/webhook-waiting/42?signature=abc', 'w1')).toBe(
			'http://localhost:5678/webhook-waiting/42?signature=abc&rtw=w1',
		);
	});

	it('leaves the URL alone without a wait id', () => {
		expect(callbackUrlFor('http://localhost:5678/webhook-waiting/42?signature=abc', '')).toBe(
			'http://localhost:5678/webhook-waiting/42?signature=abc',
		);
	});
});

describe('internal notice', () => {
	const record = newWait('c', STARTED, STARTED + 1000, true, fixedRandom);

	it('verifies only with this wait and this body', () => {
		const header = signNotice(record, '{"failed":true}');
		expect(verifyNotice(record, header, '{"failed":true}')).toEqual({ ok: true });
		expect(verifyNotice(record, header, '{"failed":false}')).toMatchObject({
			ok: false,
			status: 403,
		});
		const other = newWait('c', STARTED, STARTED + 1000, true);
		expect(verifyNotice(other, header, '{"failed":true}')).toMatchObject({
			ok: false,
			status: 403,
		});
	});
});
