/**
 * Rate limits high enough never to throttle a test, the bench or the chaos suite: the API's
 * defaults protect a fresh deployment (100 failed authentications per address per minute, …),
 * and a load generator on one address with one key is exactly what they refuse. Every harness
 * that starts an API sets these explicitly; a test of the limits sets its own.
 */
export const UNTHROTTLED_RATE_LIMITS: Readonly<Record<string, string>> = {
  RATE_LIMIT_ADDRESS_MAX: '1000000000',
  RATE_LIMIT_KEY_MAX: '1000000000',
  RATE_LIMIT_OWNER_ITEMS_MAX: '1000000000',
  RATE_LIMIT_AUTH_FAILURES_MAX: '1000000000',
};
