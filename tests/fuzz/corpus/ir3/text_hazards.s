˜
  ldg.f32 r1.x, g[r0.x], 1
  add.f r2.x, r1.x, r1.x
  rcp r3.x, r2.x
  mul.f r4.x, r3.x, r3.x
  end
