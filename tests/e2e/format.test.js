// The console's formatting helpers (console/format.js), without a browser.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as fmt from '../../console/format.js';

test('positions are degrees, minutes, seconds and hemisphere', () => {
  const rotterdam = { latitudeDeg: 51, latitudeMin: 55, latitudeSec: null, latitudeNs: 'N', longitudeDeg: 4, longitudeMin: 30, longitudeSec: null, longitudeWe: 'E' };
  assert.equal(fmt.position(rotterdam), '51°55′00″N 4°30′00″E');
  assert.equal(fmt.dms(23, 5, 7.25, 'S'), '23°05′07.25″S');
  assert.equal(fmt.dms(0, 0, 0, 'W'), '0°00′00″W');
  assert.equal(fmt.dms(180, null, null, 'E'), '180°00′00″E');
  assert.equal(fmt.dms(null, 10, 0, 'N'), '');
  assert.equal(fmt.dms(10, 0, 0, null), '');
  assert.equal(fmt.position({ latitudeDeg: 1, latitudeNs: 'N' }), '1°00′00″N');
  assert.equal(fmt.position({}), '');
  assert.equal(fmt.decimalDegrees(51, 55, 0, 'N').toFixed(5), '51.91667');
  assert.equal(fmt.decimalDegrees(46, 20, 0, 'W').toFixed(5), '-46.33333');
});

test('numbers, sizes, dates and durations', () => {
  assert.equal(fmt.number(5000), '5,000');
  assert.equal(fmt.number('-1234567.891'), '-1,234,567.891');
  assert.equal(fmt.number(0.05), '0.05');
  assert.equal(fmt.number('n/a'), 'n/a');
  assert.equal(fmt.number(null), '');
  assert.equal(fmt.bytes(999), '999 B');
  assert.equal(fmt.bytes(183204), '183 KB');
  assert.equal(fmt.bytes(3 * 1024 * 1024), '3.1 MB');
  assert.equal(fmt.dateTime('2026-12-01T09:00:00.000Z'), '2026-12-01 09:00 UTC');
  assert.equal(fmt.dateTime('2026-12-01T10:30:15+01:00'), '2026-12-01 09:30:15 UTC');
  assert.equal(fmt.dateTime(null), '');
  assert.equal(fmt.dayStart('2026-12-31'), '2026-12-31T00:00:00Z');
  assert.equal(fmt.dayAfter('2026-12-31'), '2027-01-01T00:00:00Z');
  assert.equal(fmt.duration(45 * 60_000), '45 min');
  assert.equal(fmt.duration(150 * 60_000), '2 h 30 min');
  assert.equal(fmt.duration(76 * 3_600_000), '3 d 4 h');
});
