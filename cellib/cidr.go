// This file holds Kubernetes' CIDR library (kubernetes.net.cidr).

package cellib

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// CIDRType is the CEL type of cidr()'s result, net.CIDR (opaque).
var CIDRType = cel.OpaqueType("net.CIDR")

// CIDR returns the CIDR library. A CIDR is an address and a prefix length
// as net/netip parses it (no IPv4-mapped IPv6 addresses, no leading zeros);
// host bits after the prefix are kept, and masked() clears them.
//
//	cidr(<string>) net.CIDR            error "network address parse error during conversion from string: ..."
//	isCIDR(<string>) bool
//	<net.CIDR>.containsIP(<net.IP|string>) bool
//	<net.CIDR>.containsCIDR(<net.CIDR|string>) bool
//	<net.CIDR>.ip() net.IP             the address as written
//	<net.CIDR>.masked() net.CIDR       host bits cleared
//	<net.CIDR>.prefixLength() int
//	string(<net.CIDR>) string
//
// Examples:
//
//	cidr('192.168.0.0/24').containsIP('192.168.0.1')           // true
//	cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()  // false
func CIDR() cel.EnvOption {
	member := func(name, id string, out *cel.Type, f func(netip.Prefix) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{CIDRType}, out, cel.UnaryBinding(func(v ref.Val) ref.Val {
			c, ok := v.(cidrVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return f(c.Prefix)
		})))
	}
	return cel.Lib(&library{name: "kubernetes.net.cidr", options: []cel.EnvOption{
		cel.Types(CIDRType),
		cel.Function("cidr", cel.Overload("string_to_cidr", []*cel.Type{cel.StringType}, CIDRType, cel.UnaryBinding(stringToCIDR))),
		cel.Function("isCIDR", cel.Overload("is_cidr", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, bad := stringArg(v)
			if bad != nil {
				return bad
			}
			_, err := parseCIDR(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("containsIP",
			cel.MemberOverload("cidr_contains_ip_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(func(c, s ref.Val) ref.Val { return cidrContainsIP(c, stringToIP(s)) })),
			cel.MemberOverload("cidr_contains_ip_ip", []*cel.Type{CIDRType, IPType}, cel.BoolType, cel.BinaryBinding(cidrContainsIP))),
		cel.Function("containsCIDR",
			cel.MemberOverload("cidr_contains_cidr_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(func(c, s ref.Val) ref.Val { return cidrContainsCIDR(c, stringToCIDR(s)) })),
			cel.MemberOverload("cidr_contains_cidr", []*cel.Type{CIDRType, CIDRType}, cel.BoolType, cel.BinaryBinding(cidrContainsCIDR))),
		member("ip", "cidr_ip", IPType, func(p netip.Prefix) ref.Val { return ipVal{Addr: p.Addr()} }),
		member("prefixLength", "cidr_prefix_length", cel.IntType, func(p netip.Prefix) ref.Val { return types.Int(p.Bits()) }),
		member("masked", "cidr_masked", CIDRType, func(p netip.Prefix) ref.Val { return cidrVal{Prefix: p.Masked()} }),
		cel.Function("string", cel.Overload("cidr_to_string", []*cel.Type{CIDRType}, cel.StringType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			c, ok := v.(cidrVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.String(c.Prefix.String())
		}))),
		cel.CostModel(
			scan("string_to_cidr", 0, 0, stringFactor, false),
			scan("is_cidr", 0, 0, stringFactor, false),
			fixed("cidr_ip", 1), fixed("cidr_prefix_length", 1), fixed("cidr_masked", 1),
			containsModel("cidr_contains_ip_ip", false, false),
			containsModel("cidr_contains_ip_string", false, true),
			containsModel("cidr_contains_cidr", true, false),
			containsModel("cidr_contains_cidr_string", true, true),
		),
	}})
}

func stringToCIDR(v ref.Val) ref.Val {
	s, bad := stringArg(v)
	if bad != nil {
		return bad
	}
	p, err := parseCIDR(s)
	if err != nil {
		return types.NewErr("network address parse error during conversion from string: %v", err)
	}
	return cidrVal{Prefix: p}
}

// parseCIDR parses a CIDR as Kubernetes' CEL does (whose errors repeat the
// "network address parse error" prefix, as Kubernetes' do).
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network address parse error during conversion from string: %v", err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return p, nil
}

func cidrContainsIP(c, ip ref.Val) ref.Val {
	p, ok := c.(cidrVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(c)
	}
	a, ok := ip.(ipVal)
	if !ok {
		// As Kubernetes: "no such overload" even for a string that is not
		// an address (containsCIDR reports the parse error).
		return types.MaybeNoSuchOverloadErr(c)
	}
	return types.Bool(p.Contains(a.Addr))
}

func cidrContainsCIDR(c, other ref.Val) ref.Val {
	p, ok := c.(cidrVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(c)
	}
	o, ok := other.(cidrVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(p.Overlaps(o.Prefix) && p.Bits() <= o.Bits())
}

// containsModel prices containsIP and containsCIDR: comparing address bytes
// (4 to 16), once more for a CIDR's prefix, plus parsing a string argument.
func containsModel(id string, cidr, str bool) cost.OverloadModel {
	return priced(id,
		func(e cost.Estimator, _ *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
			if len(args) < 1 {
				return nil
			}
			sz := cost.RangedSizeEstimate(4, 16)
			c := sz.Add(sz).MultiplyByCostFactor(stringFactor)
			if cidr {
				c = c.Add(sz.MultiplyByCostFactor(stringFactor)).Add(cost.FixedCostEstimate(1))
			}
			if str {
				c = c.Add(cost.EstimateSize(e, args[0]).MultiplyByCostFactor(stringFactor))
			}
			return cost.NewCallEstimate(c, nil)
		},
		func(args []ref.Val, _ ref.Val) *uint64 {
			if len(args) < 2 {
				return nil
			}
			n := actualSize(args[0])
			c := ceilCost(float64(n+n) * stringFactor)
			if cidr {
				c = cost.SafeAdd(c, ceilCost(float64(n)*stringFactor), 1)
			}
			if str {
				c = cost.SafeAdd(c, ceilCost(float64(actualSize(args[1]))*stringFactor))
			}
			return &c
		})
}

// cidrVal is a value of CIDRType.
type cidrVal struct{ netip.Prefix }

var _ ref.Val = cidrVal{}

// ConvertToNative returns the netip.Prefix, or its string.
func (d cidrVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(d.Prefix).AssignableTo(typeDesc) {
		return d.Prefix, nil
	}
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return d.Prefix.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'CIDR' to '%v'", typeDesc)
}

// ConvertToType converts to CIDRType, string or type.
func (d cidrVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.StringType {
		return types.String(d.Prefix.String())
	}
	return objectVal{CIDRType}.convert(d, t)
}

// Equal compares address and prefix length; another type is an error.
func (d cidrVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(cidrVal)
	if !ok {
		return types.ValOrErr(other, "no such overload")
	}
	return types.Bool(d.Prefix == o.Prefix)
}

// Type is CIDRType.
func (d cidrVal) Type() ref.Type { return CIDRType }

// Value is the netip.Prefix.
func (d cidrVal) Value() any { return d.Prefix }

// Size is the prefix's length in bytes, for cost.
func (d cidrVal) Size() ref.Val { return types.Int(int(math.Ceil(float64(d.Prefix.Bits()) / 8))) }
