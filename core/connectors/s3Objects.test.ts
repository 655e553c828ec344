import { compareKeys, parseError, parseListPage, xmlChild, xmlText } from './s3Objects';

describe("the XML reader of S3's answers", () => {
	it("decodes XML's entities and character references", () => {
		expect(xmlText('&quot;a&amp;b&lt;c&gt;&apos;&#252;&#xFC;&quot;')).toBe(`"a&b<c>'üü"`);
	});

	it('reads an empty element, with or without attributes', () => {
		expect(xmlChild('<Prefix/><Key a="1"/>', 'Prefix')).toBe('');
		expect(xmlChild('<Prefix/><Key a="1"/>', 'Key')).toBe('');
	});

	it.each([
		['an unknown entity', () => xmlText('a&nbsp;b'), 'unknown entity "&nbsp;"'],
		['an unterminated entity', () => xmlText('a&amp b'), 'unterminated entity "&amp"'],
		['markup inside text', () => xmlChild('<Key>a<b/></Key>', 'Key'), 'unexpected markup'],
		['a missing closing tag', () => xmlChild('<Key>a', 'Key'), '<Key> has no closing tag'],
		[
			'an element given twice',
			() => xmlChild('<Key>a</Key><Key>b</Key>', 'Key'),
			'more than one <Key>',
		],
	])('refuses %s', (_, read, message) => {
		expect(read).toThrow(message);
	});

	it('reads a ListBucketResult page: objects, and the token only when truncated', () => {
		const page = parseListPage(
			`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>drop</Name><Prefix/><IsTruncated>true</IsTruncated><Contents><Key>in/a&amp;b.csv</Key><LastModified>2026-12-03T11:21:00.000Z</LastModified><ETag>&quot;0cc175b9c0f1b6a831c399e269772661-2&quot;</ETag><Size>1</Size></Contents><NextContinuationToken>1/ab+c=</NextContinuationToken></ListBucketResult>`,
		);
		expect(page).toEqual({
			objects: [
				{
					key: 'in/a&b.csv',
					size: 1,
					lastModified: '2026-12-03T11:21:00.000Z',
					lastModifiedMs: Date.UTC(2026, 11, 3, 11, 21),
					etag: '0cc175b9c0f1b6a831c399e269772661-2',
					storageClass: 'STANDARD',
				},
			],
			nextContinuationToken: '1/ab+c=',
		});
	});

	it('refuses a page that is truncated without a token, or is not a listing', () => {
		expect(() =>
			parseListPage('<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>'),
		).toThrow('IsTruncated is true without a NextContinuationToken');
		expect(() => parseListPage('<html>Bad gateway</html>')).toThrow(
			'the answer is not one ListBucketResult',
		);
	});

	it('reads the Code and Message of an Error answer', () => {
		expect(
			parseError('<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>'),
		).toEqual({ code: 'AccessDenied', message: 'Access Denied' });
		expect(parseError('<CopyObjectResult><ETag>x</ETag></CopyObjectResult>')).toBeUndefined();
	});
});

it("orders keys as S3 lists them, by UTF-8 bytes, not JavaScript's UTF-16 order", () => {
	// U+FF61 sorts before U+1F600 in UTF-16 (0xFF61 < 0xD83D) but after it in UTF-8 (EF < F0).
	expect(compareKeys('a\u{FF61}', 'a\u{1F600}')).toBeLessThan(0);
	expect('a\u{FF61}' < 'a\u{1F600}').toBe(false);
});
