package doctor

// SlotsCheck is slotsCheck, for the table test of its branches.
var SlotsCheck = slotsCheck
