// Package storetest opens real, temporary event stores for other packages'
// tests and builds test objects.
package storetest
