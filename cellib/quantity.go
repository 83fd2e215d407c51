// This file holds Kubernetes' quantity library (kubernetes.quantity) and
// the quantity it works on, with resource.Quantity's rules: the parser
// (suffixes, exponents, rounding up to nanos, the BinarySI cap), the two
// forms a value is kept in (an int64 with a decimal exponent while it fits,
// an arbitrary-precision decimal after), and what each form answers to
// isInteger and asApproximateFloat.

package cellib

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// QuantityType is the CEL type of quantity()'s result, kubernetes.Quantity.
var QuantityType = cel.ObjectType("kubernetes.Quantity")

// Quantity returns the quantity library:
//
//	quantity(<string>) Quantity          error as resource.ParseQuantity's
//	isQuantity(<string>) bool
//	sign(<Quantity>) int                 -1, 0 or 1 (a function, not a method, as in Kubernetes)
//	<Quantity>.isInteger() bool          asInteger would succeed
//	<Quantity>.asInteger() int           error "cannot convert value to integer"
//	<Quantity>.asApproximateFloat() double
//	<Quantity>.add(<Quantity|int>) Quantity
//	<Quantity>.sub(<Quantity|int>) Quantity
//	<Quantity>.isLessThan(<Quantity>) bool
//	<Quantity>.isGreaterThan(<Quantity>) bool
//	<Quantity>.compareTo(<Quantity>) int
//
// As in Kubernetes, isInteger is about the form a value is kept in, not
// only its value: quantity('1000m') and quantity('1.5Ki') are not integers
// (a negative exponent, and a binary suffix with a fraction, are not kept as
// int64), quantity('1k') is.
//
// Examples:
//
//	quantity('200M').compareTo(quantity('0.2G'))   // 0
//	quantity('50k').add(20).asInteger()            // 50020
//	isQuantity('200K')                             // false: K is not a suffix
func Quantity() cel.EnvOption {
	q := QuantityType
	bin := func(id string, out *cel.Type, f func(a, b quantityVal) ref.Val) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{q, q}, out, cel.BinaryBinding(func(x, y ref.Val) ref.Val {
			a, ok := x.(quantityVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(x)
			}
			b, ok := y.(quantityVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(y)
			}
			return f(a, b)
		}))
	}
	withInt := func(id string, f func(a, b quantityVal) ref.Val) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{q, cel.IntType}, q, cel.BinaryBinding(func(x, y ref.Val) ref.Val {
			a, ok := x.(quantityVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(x)
			}
			n, ok := y.(types.Int)
			if !ok {
				return types.MaybeNoSuchOverloadErr(y)
			}
			return f(a, quantityVal{v: int64(n)})
		}))
	}
	unary := func(id string, out *cel.Type, f func(a quantityVal) ref.Val) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{q}, out, cel.UnaryBinding(func(x ref.Val) ref.Val {
			a, ok := x.(quantityVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(x)
			}
			return f(a)
		}))
	}
	return cel.Lib(&library{name: "kubernetes.quantity", options: []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, q, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, bad := stringArg(v)
			if bad != nil {
				return bad
			}
			r, err := parseQuantity(s)
			if err != nil {
				return types.WrapErr(err)
			}
			return r
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, bad := stringArg(v)
			if bad != nil {
				return bad
			}
			_, err := parseQuantity(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{q}, cel.IntType, cel.UnaryBinding(func(x ref.Val) ref.Val {
			a, ok := x.(quantityVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(x)
			}
			return types.Int(a.sign())
		}))),
		cel.Function("isGreaterThan", bin("quantity_is_greater_than", cel.BoolType, func(a, b quantityVal) ref.Val { return types.Bool(a.cmp(b) == 1) })),
		cel.Function("isLessThan", bin("quantity_is_less_than", cel.BoolType, func(a, b quantityVal) ref.Val { return types.Bool(a.cmp(b) == -1) })),
		cel.Function("compareTo", bin("quantity_compare_to", cel.IntType, func(a, b quantityVal) ref.Val { return types.Int(a.cmp(b)) })),
		cel.Function("asApproximateFloat", unary("quantity_get_float", cel.DoubleType, func(a quantityVal) ref.Val { return types.Double(a.approximateFloat()) })),
		cel.Function("asInteger", unary("quantity_get_int", cel.IntType, func(a quantityVal) ref.Val {
			v, ok := a.int64()
			if !ok {
				return types.WrapErr(errors.New("cannot convert value to integer"))
			}
			return types.Int(v)
		})),
		cel.Function("isInteger", unary("quantity_is_integer", cel.BoolType, func(a quantityVal) ref.Val {
			_, ok := a.int64()
			return types.Bool(ok)
		})),
		cel.Function("add",
			bin("quantity_add", q, func(a, b quantityVal) ref.Val { return a.add(b) }),
			withInt("quantity_add_int", func(a, b quantityVal) ref.Val { return a.add(b) })),
		cel.Function("sub",
			bin("quantity_sub", q, func(a, b quantityVal) ref.Val { return a.sub(b) }),
			withInt("quantity_sub_int", func(a, b quantityVal) ref.Val { return a.sub(b) })),
		cel.CostModel(
			scan("string_to_quantity", 0, 0, stringFactor, false),
			scan("is_quantity_string", 0, 0, stringFactor, false),
			fixed("quantity_sign", 1), fixed("quantity_is_greater_than", 1), fixed("quantity_is_less_than", 1),
			fixed("quantity_compare_to", 1), fixed("quantity_get_float", 1), fixed("quantity_get_int", 1),
			fixed("quantity_is_integer", 1), fixed("quantity_add", 1), fixed("quantity_add_int", 1),
			fixed("quantity_sub", 1), fixed("quantity_sub_int", 1),
		),
	}})
}

// quantityVal is a value of QuantityType: v × 10^s while it fits an int64
// (d nil), d × 10^e once it does not, as resource.Quantity keeps it.
type quantityVal struct {
	d *big.Int
	v int64
	s int32
	e int32
}

var _ ref.Val = quantityVal{}

// The errors of parseQuantity, worded as resource.ParseQuantity's.
var (
	errQuantityFormat  = errors.New("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
	errQuantityNumeric = errors.New("unable to parse numeric part of quantity")
	errQuantitySuffix  = errors.New("unable to parse quantity's suffix")
	errQuantityRange   = errors.New("quantity out of range: exponents too far apart")
)

const (
	nanoScale = -9
	// maxInt64Factors is how many digits an int64 form may be parsed from.
	maxInt64Factors = 18
	// maxAlign bounds the digits added to align two exponents: Kubernetes
	// allocates them all (a gap of 10^9 is gigabytes); annex refuses past
	// this many.
	maxAlign = 10_000
)

// parseQuantity is resource.ParseQuantity.
func parseQuantity(str string) (quantityVal, error) {
	if str == "" {
		return quantityVal{}, errQuantityFormat
	}
	if str == "0" {
		return quantityVal{}, nil
	}
	positive, value, num, denom, suffix, err := splitQuantity(str)
	if err != nil {
		return quantityVal{}, err
	}
	base, exponent, binarySI, ok := interpretSuffix(suffix)
	if !ok {
		return quantityVal{}, errQuantitySuffix
	}

	// The int64 form, when the digits and the suffix fit one.
	precision, scale, mantissa := int32(0), int32(0), int64(1)
	if !binarySI {
		scale = exponent
		precision = maxInt64Factors - int32(len(num)+len(denom))
	} else if exponent >= 0 && denom == "" {
		mantissa <<= uint(exponent)
		precision = 15 - int32(len(num)) - int32(float32(exponent)*3/10) - 1
	} else {
		precision = -1
	}
	if precision >= 0 {
		scale -= int32(len(denom))
		if scale >= nanoScale {
			v, err := strconv.ParseInt(num+denom, 10, 64)
			if err != nil {
				return quantityVal{}, errQuantityNumeric
			}
			if r, ok := mulInt64(v, mantissa); ok {
				if !positive {
					r = -r
				}
				return quantityVal{v: r, s: scale}, nil
			}
		}
	}

	// The decimal form: the digits as written, times the suffix, rounded
	// up to nanos.
	d, e, ok := parseDecimal(value)
	if !ok {
		return quantityVal{}, errQuantityNumeric
	}
	if base == 10 {
		e += exponent
	} else {
		d.Lsh(d, uint(exponent))
	}
	neg := d.Sign() < 0
	d.Abs(d)
	if d.Sign() != 0 {
		switch {
		case e < nanoScale:
			// Rounding up a positive number: when it has fewer digits than
			// are dropped, it is below one nano and rounds up to one,
			// without computing the (possibly gigantic) divisor.
			if gap := int64(nanoScale) - int64(e); gap > int64(len(d.Text(10))) {
				d.SetInt64(1)
			} else {
				var rem big.Int
				d.QuoRem(d, pow10(gap), &rem)
				if rem.Sign() != 0 {
					d.Add(d, big.NewInt(1))
				}
			}
			e = nanoScale
		case e > nanoScale && int64(e)-nanoScale <= maxAlign:
			d.Mul(d, pow10(int64(e)-nanoScale))
			e = nanoScale
		}
	}
	if binarySI && cmpDecimal(d, e, big.NewInt(math.MaxInt64), 0) > 0 {
		d, e = big.NewInt(math.MaxInt64), 0
	}
	if neg {
		d.Neg(d)
	}
	return quantityVal{d: d, e: e}, nil
}

// splitQuantity splits a quantity into its sign, its number as written
// (value, with sign), the digits before and after the point (num without
// leading zeros, "0" for none) and the suffix.
func splitQuantity(str string) (positive bool, value, num, denom, suffix string, err error) {
	positive = true
	pos, end := 0, len(str)
	switch str[0] {
	case '-':
		positive = false
		pos++
	case '+':
		pos++
	}
	for pos < end && str[pos] == '0' {
		pos++
	}
	if pos == end {
		return positive, "0", "0", "", "", nil
	}
	i := pos
	for i < end && isDigit(str[i]) {
		i++
	}
	if i == end {
		return positive, str, str[pos:], "", "", nil
	}
	num, pos = str[pos:i], i
	if num == "" {
		num = "0"
	}
	if str[pos] == '.' {
		pos++
		i = pos
		for i < end && isDigit(str[i]) {
			i++
		}
		if i == end {
			return positive, str, num, str[pos:], "", nil
		}
		denom, pos = str[pos:i], i
	}
	value = str[:pos]
	start := pos
	for pos < end && strings.IndexByte("eEinumkKMGTP", str[pos]) >= 0 {
		pos++
	}
	if pos < end && (str[pos] == '-' || str[pos] == '+') {
		pos++
	}
	for pos < end && isDigit(str[pos]) {
		pos++
	}
	if pos < end {
		return false, "", "", "", "", errQuantityFormat
	}
	return positive, value, num, denom, str[start:], nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// interpretSuffix returns what a suffix multiplies by: base^exponent, and
// whether it is a binary (Ki...Ei) one.
func interpretSuffix(s string) (base, exponent int32, binarySI, ok bool) {
	switch s {
	case "":
		return 10, 0, false, true
	case "n":
		return 10, -9, false, true
	case "u":
		return 10, -6, false, true
	case "m":
		return 10, -3, false, true
	case "k":
		return 10, 3, false, true
	case "M":
		return 10, 6, false, true
	case "G":
		return 10, 9, false, true
	case "T":
		return 10, 12, false, true
	case "P":
		return 10, 15, false, true
	case "E":
		return 10, 18, false, true
	case "Ki":
		return 2, 10, true, true
	case "Mi":
		return 2, 20, true, true
	case "Gi":
		return 2, 30, true, true
	case "Ti":
		return 2, 40, true, true
	case "Pi":
		return 2, 50, true, true
	case "Ei":
		return 2, 60, true, true
	}
	if len(s) > 1 && (s[0] == 'e' || s[0] == 'E') {
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil {
			return 0, 0, false, false
		}
		return 10, int32(n), false, true // truncated to 32 bits, as Kubernetes does
	}
	return 0, 0, false, false
}

// parseDecimal reads [+-]digits[.digits] as d × 10^e.
func parseDecimal(s string) (*big.Int, int32, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	if digits == "" || strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return nil, 0, false
	}
	d, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, 0, false
	}
	if neg {
		d.Neg(d)
	}
	return d, -int32(len(frac)), true
}

func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 || a == 1 || b == 1 {
		return a * b, true
	}
	if a == math.MinInt64 || b == math.MinInt64 {
		return 0, false
	}
	c := a * b
	return c, c/b == a
}

func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

// decimal returns q as d × 10^e (d shared with q in the decimal form).
func (q quantityVal) decimal() (*big.Int, int32) {
	if q.d != nil {
		return q.d, q.e
	}
	return big.NewInt(q.v), q.s
}

func (q quantityVal) sign() int {
	if q.d != nil {
		return q.d.Sign()
	}
	switch {
	case q.v > 0:
		return 1
	case q.v < 0:
		return -1
	}
	return 0
}

// int64 is resource.Quantity.AsInt64: only the int64 form with an exponent
// of zero or more, and no overflow.
func (q quantityVal) int64() (int64, bool) {
	if q.d != nil || q.s < 0 {
		return 0, false
	}
	v := q.v
	for i := int32(0); i < q.s && v != 0; i++ {
		if v > math.MaxInt64/10 || v < math.MinInt64/10 {
			return 0, false
		}
		v *= 10
	}
	return v, true
}

// approximateFloat is resource.Quantity.AsApproximateFloat64.
func (q quantityVal) approximateFloat() float64 {
	var base float64
	var exp int32
	if q.d != nil {
		base, _ = new(big.Float).SetInt(q.d).Float64()
		exp = q.e
	} else {
		base, exp = float64(q.v), q.s
	}
	if exp == 0 {
		return base
	}
	return base * math.Pow10(int(exp))
}

// cmp compares exactly, whatever the forms.
func (q quantityVal) cmp(o quantityVal) int {
	if q.d == nil && o.d == nil && q.s == o.s {
		switch {
		case q.v < o.v:
			return -1
		case q.v > o.v:
			return 1
		}
		return 0
	}
	a, ae := q.decimal()
	b, be := o.decimal()
	return cmpDecimal(a, ae, b, be)
}

// cmpDecimal compares a × 10^ae with b × 10^be without multiplying out
// exponents that are far apart.
func cmpDecimal(a *big.Int, ae int32, b *big.Int, be int32) int {
	sa, sb := a.Sign(), b.Sign()
	if sa != sb || sa == 0 {
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	}
	// Same sign, both non-zero: compare the positions of the leading digits.
	la := int64(len(new(big.Int).Abs(a).Text(10))) + int64(ae)
	lb := int64(len(new(big.Int).Abs(b).Text(10))) + int64(be)
	if la != lb {
		if (la > lb) == (sa > 0) {
			return 1
		}
		return -1
	}
	// Equal magnitudes: the gap between exponents is at most the difference
	// in digit counts, so aligning is cheap.
	x, y := a, b
	if ae > be {
		x = new(big.Int).Mul(a, pow10(int64(ae)-int64(be)))
	} else if be > ae {
		y = new(big.Int).Mul(b, pow10(int64(be)-int64(ae)))
	}
	return x.Cmp(y)
}

// add is resource.Quantity.Add: in the int64 form when both are and the
// sum fits, else in the decimal form at the smaller exponent.
func (q quantityVal) add(o quantityVal) ref.Val {
	if q.d == nil && o.d == nil {
		if r, ok := addInt64Form(q, o); ok {
			return r
		}
	}
	b, be := o.decimal()
	return q.addDecimal(b, be)
}

// sub is resource.Quantity.Sub: the int64 form's Add of the negation
// (which wraps for the smallest int64, as Kubernetes'), else an exact
// decimal difference.
func (q quantityVal) sub(o quantityVal) ref.Val {
	if q.d == nil && o.d == nil {
		if r, ok := addInt64Form(q, quantityVal{v: -o.v, s: o.s}); ok {
			return r
		}
	}
	b, be := o.decimal()
	return q.addDecimal(new(big.Int).Neg(b), be)
}

// addDecimal is q + b × 10^be in the decimal form.
func (q quantityVal) addDecimal(b *big.Int, be int32) ref.Val {
	a, ae := q.decimal()
	e := min(ae, be)
	x, err := alignTo(a, ae, e)
	if err != nil {
		if b.Sign() == 0 {
			return q // too far to align, and nothing to add
		}
		return types.WrapErr(err)
	}
	y, err := alignTo(b, be, e)
	if err != nil {
		if a.Sign() == 0 {
			return quantityVal{d: b, e: be}
		}
		return types.WrapErr(err)
	}
	return quantityVal{d: new(big.Int).Add(x, y), e: e}
}

// addInt64Form is the int64 form's Add: a zero operand leaves the other as
// it is, and scales are matched by multiplying the larger one down.
func addInt64Form(a, b quantityVal) (quantityVal, bool) {
	switch {
	case b.v == 0:
		return a, true
	case a.v == 0:
		return b, true
	}
	x, y, s := a.v, b.v, a.s
	if a.s > b.s {
		v, ok := scaleUp(a.v, a.s-b.s)
		if !ok {
			return quantityVal{}, false
		}
		x, s = v, b.s
	} else if b.s > a.s {
		v, ok := scaleUp(b.v, b.s-a.s)
		if !ok {
			return quantityVal{}, false
		}
		y = v
	}
	c := x + y
	if (x > 0 && y > 0 && c < 0) || (x < 0 && y < 0 && (c > 0 || (x == math.MinInt64 && y == math.MinInt64))) {
		return quantityVal{}, false
	}
	return quantityVal{v: c, s: s}, true
}

// scaleUp is v × 10^n, or false on overflow.
func scaleUp(v int64, n int32) (int64, bool) {
	for i := int32(0); i < n && v != 0; i++ {
		if v > math.MaxInt64/10 || v < math.MinInt64/10 {
			return 0, false
		}
		v *= 10
	}
	return v, true
}

// alignTo returns d × 10^(e-to), for to <= e.
func alignTo(d *big.Int, e, to int32) (*big.Int, error) {
	if e == to || d.Sign() == 0 {
		return d, nil
	}
	if int64(e)-int64(to) > maxAlign {
		return nil, errQuantityRange
	}
	return new(big.Int).Mul(d, pow10(int64(e)-int64(to))), nil
}

// ConvertToNative fails: a quantity has no Go form outside this package.
func (q quantityVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return objectVal{QuantityType}.ConvertToNative(typeDesc)
}

// ConvertToType converts to QuantityType or type only.
func (q quantityVal) ConvertToType(t ref.Type) ref.Val { return objectVal{QuantityType}.convert(q, t) }

// Equal compares the values: quantity('1k') == quantity('1000').
func (q quantityVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(quantityVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(q.cmp(o) == 0)
}

// Type is QuantityType.
func (q quantityVal) Type() ref.Type { return QuantityType }

// Value is the quantityVal itself.
func (q quantityVal) Value() any { return q }
